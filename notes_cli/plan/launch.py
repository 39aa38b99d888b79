"""Launch sketches: the shell commands that would run a deployment on real hardware with LMDeploy,
vLLM or SGLang.

A sketch is written from the deployment alone (mode, node groups, TP, chips, link, batch and
chunk sizes) and is never run here. Every flag it writes is checked against the flags recorded
from that engine's own argument definitions (templates/launch/flags.toml, written by
scripts/extract_launch_flags.py; see `notes_cli.plan.launch_flags`). What a flag cannot say
(the router vLLM does not ship, a link an engine has no protocol for) goes in the notes.

    sketch = launch_sketch(deployment, catalog, "lmdeploy")
    print(sketch.text())
"""

from __future__ import annotations

import json
import math
import re
import textwrap
from dataclasses import dataclass, field
from typing import Any

from notes_cli.engine.core.costmodel import NodeCost
from notes_cli.engine.core.deployment_file import dump_deployment
from notes_cli.engine.core.profiles import Catalog, Deployment, NodeGroup
from notes_cli.errors import UsageError
from notes_cli.plan.launch_flags import is_flag, load_launch_flags

__all__ = ["ENGINES", "LaunchSketch", "LaunchStep", "dump_deployment", "launch_sketch"]

ENGINES = ("lmdeploy", "vllm", "sglang")

# Weights for the shipped model shapes; anything else gets a placeholder the user fills in.
_MODEL_IDS = {
    "qwen3-8b": "Qwen/Qwen3-8B",
    "llama-3-8b": "meta-llama/Meta-Llama-3-8B-Instruct",
    "llama-3-70b": "meta-llama/Meta-Llama-3-70B-Instruct",
    "llama-2-13b": "meta-llama/Llama-2-13b-chat-hf",
    "llama-2-7b": "meta-llama/Llama-2-7b-chat-hf",
    "mistral-7b": "mistralai/Mistral-7B-v0.1",
    "llama-3.1-8b": "meta-llama/Llama-3.1-8B-Instruct",
    "llama-3.1-70b": "meta-llama/Llama-3.1-70B-Instruct",
    "qwen3-32b": "Qwen/Qwen3-32B",
    "qwen3-30b-a3b": "Qwen/Qwen3-30B-A3B",
    "qwen3-235b-a22b": "Qwen/Qwen3-235B-A22B",
    "deepseek-v3": "deepseek-ai/DeepSeek-V3",
    "deepseek-r1": "deepseek-ai/DeepSeek-R1",
    "kimi-k2": "moonshotai/Kimi-K2-Instruct",
    "glm-4.5": "zai-org/GLM-4.5",
    "gpt-oss-120b": "openai/gpt-oss-120b",
}

NOT_LAUNCHED = (
    "NOT LAUNCHED: pdnotes wrote this sketch from the deployment and checked each flag against "
    "the argument definitions of {engine} {version}; it did not run any of it, and none of it "
    "was tried on real hardware here. Check paths, devices and ports before you run it."
)


@dataclass(frozen=True)
class LaunchStep:
    """One process to start: what it is, where, and its command as argv (env assignments
    first, e.g. CUDA_VISIBLE_DEVICES=0)."""

    title: str
    where: str
    argv: tuple[str, ...]

    def shell(self) -> str:
        """The command as it would be typed: one flag per continued line."""
        lines: list[str] = []
        previous = ""
        for word in self.argv:
            module = word == "-m" and previous == "python"  # `python -m pkg` stays together
            if not lines or (is_flag(word) and not module):
                lines.append(_quote(word))
            else:
                lines[-1] += " " + _quote(word)
            previous = word
        return " \\\n    ".join(lines)


@dataclass(frozen=True)
class LaunchSketch:
    engine: str
    version: str
    deployment: str
    summary: str
    variables: tuple[tuple[str, str, str], ...]  # (name, value, what it is)
    steps: tuple[LaunchStep, ...]
    notes: tuple[str, ...] = field(default=())

    @property
    def not_launched(self) -> str:
        return NOT_LAUNCHED.format(engine=_ENGINE_NAMES[self.engine], version=self.version)

    def commands(self) -> list[str]:
        return [step.shell() for step in self.steps]

    def text(self) -> str:
        """Plain text a user can read and copy: variables, numbered commands, notes, and the
        note that nothing was launched."""
        out = [
            f"# Launch sketch: {self.deployment} on {_ENGINE_NAMES[self.engine]} {self.version}",
            f"# {self.summary}",
            "",
            "# Set these first:",
        ]
        out += [f"export {name}={_quote(value)}  # {what}" for name, value, what in self.variables]
        for number, step in enumerate(self.steps, 1):
            out += ["", f"# {number}. {step.title} ({step.where})", step.shell()]
        if self.notes:
            out += ["", "# Notes:"]
            for note in self.notes:
                out += textwrap.wrap(note, 96, initial_indent="# - ", subsequent_indent="#   ")
        out += [""] + textwrap.wrap(
            self.not_launched, 96, initial_indent="# ", subsequent_indent="# "
        )
        return "\n".join(out) + "\n"

    def to_json(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "engine_version": self.version,
            "deployment": self.deployment,
            "summary": self.summary,
            "variables": [{"name": n, "value": v, "about": w} for n, v, w in self.variables],
            "steps": [
                {"title": s.title, "where": s.where, "argv": list(s.argv), "shell": s.shell()}
                for s in self.steps
            ],
            "notes": list(self.notes),
            "launched": False,
            "not_launched": self.not_launched,
        }


_ENGINE_NAMES = {"lmdeploy": "LMDeploy", "vllm": "vLLM", "sglang": "SGLang"}


def launch_sketch(deployment: Deployment, catalog: Catalog, engine: str) -> LaunchSketch:
    """The commands that would run `deployment` on `engine` (lmdeploy | vllm | sglang).
    Raises UsageError for another engine name."""
    if engine not in ENGINES:
        raise UsageError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")
    plan = _Plan(deployment, catalog)
    try:
        version = load_launch_flags().engine(engine).version
    except FileNotFoundError:  # only while scripts/extract_launch_flags.py writes the first one
        version = "(flags not recorded)"
    builder = {"lmdeploy": _lmdeploy, "vllm": _vllm, "sglang": _sglang}[engine]
    steps, notes = builder(plan)
    unwritten = _unwritten(deployment)
    if unwritten:
        notes.append(
            f"Not written as flags: {unwritten}. The sketch writes tensor parallelism only (the "
            "recorded flag data does not cover these yet); set them by hand with your engine's "
            "expert-parallel, data-parallel-attention, quantization and KV-cache-dtype options."
        )
    return LaunchSketch(
        engine=engine,
        version=version,
        deployment=deployment.name,
        summary=plan.summary(),
        variables=tuple(plan.variables),
        steps=tuple(steps),
        notes=tuple(notes),
    )


def _unwritten(deployment: Deployment) -> str:
    """What the deployment asks for that no recorded flag writes: EP, attention DP, precision."""
    parts = []
    for role, group in deployment.worker_groups():
        if group.ep > 1 or group.dp > 1:
            parts.append(f"{role} ep {group.ep} / dp {group.dp}")
    for what, dtype in (("weights", deployment.weight_dtype), ("KV cache", deployment.kv_dtype)):
        if dtype is not None:
            parts.append(f"{what} in {dtype}")
    return ", ".join(dict.fromkeys(parts))


# -- what the deployment asks for ----------------------------------------------------------------


@dataclass(frozen=True)
class _Instance:
    role: str  # "prefill" | "decode" | "server"
    index: int  # 1-based within its role
    total: int
    group: NodeGroup

    @property
    def host_var(self) -> str:
        return f"{self.role.upper()}_HOST_{self.index}"

    @property
    def title(self) -> str:
        return f"{self.role} {self.index}/{self.total}"


class _Plan:
    """The facts every engine's sketch needs, derived once."""

    def __init__(self, deployment: Deployment, catalog: Catalog) -> None:
        self.deployment = deployment
        self.catalog = catalog
        self.model = catalog.models[deployment.model]
        self.link = catalog.links.get(deployment.link)
        self.transport = _transport(deployment.link, self.link.description if self.link else "")
        self.disagg = deployment.mode == "disagg"
        # Numbered per role across groups: a disagg preset run colocated has two server groups.
        groups = [
            ("server" if role == "colocated" else role, group)
            for role, group in deployment.worker_groups()
        ]
        totals = {role: sum(g.count for r, g in groups if r == role) for role, _ in groups}
        seen = dict.fromkeys(totals, 0)
        self.instances: list[_Instance] = []
        for role, group in groups:
            for _ in range(group.count):
                seen[role] += 1
                self.instances.append(_Instance(role, seen[role], totals[role], group))
        self.variables: list[tuple[str, str, str]] = [
            ("MODEL", _MODEL_IDS.get(deployment.model, f"/path/to/{deployment.model}"),
             f"the weights of {deployment.model}: a Hugging Face id or a local folder"),
        ]  # fmt: skip
        for inst in self.instances:
            chips = f"{inst.group.stage_gpus * inst.group.pp} x {inst.group.chip}"
            self.variables.append((inst.host_var, f"{inst.role}-{inst.index}.example", f"{chips}"))

    def add_variable(self, name: str, value: str, what: str) -> None:
        if all(existing != name for existing, _, _ in self.variables):
            self.variables.append((name, value, what))

    def summary(self) -> str:
        groups = ", ".join(
            f"{g.count} {role} x TP{g.tp}{f' PP{g.pp}' if g.pp > 1 else ''} on {g.chip}"
            for role, g in self.deployment.worker_groups()
        )
        shown = _TRANSPORT_NAMES[self.transport]
        link = f", KV over {self.deployment.link} ({shown})" if self.disagg else ""
        return f"{self.deployment.mode}: {groups}{link}"

    def ascend(self, group: NodeGroup) -> bool:
        return (
            group.chip.startswith("ascend")
            or "ascend" in self.catalog.chips[group.chip].description.lower()
        )

    def visible(self, group: NodeGroup) -> str:
        devices = ",".join(str(i) for i in range(group.stage_gpus * group.pp))
        var = "ASCEND_RT_VISIBLE_DEVICES" if self.ascend(group) else "CUDA_VISIBLE_DEVICES"
        return f"{var}={devices}"

    def kv_fraction_of_free(self, group: NodeGroup) -> float:
        """LMDeploy's --cache-max-entry-count: the KV cache's share of the memory left free after
        the weights, per GPU (its help: "percentage of free gpu memory ... excluding weights")."""
        chip = self.catalog.chips[group.chip]
        hbm = chip.hbm_gb * 1e9
        weights = self.cost(group).weight_bytes / self.gpus(group)
        free = hbm - weights
        if self.deployment.kv_capacity_tokens is not None:
            kv = self.deployment.kv_capacity_tokens * self.kv_bytes_per_token_per_gpu(group)
        else:
            kv = self.deployment.gpu_memory_utilization * hbm - weights
        if free <= 0:
            return 0.05
        return round(min(0.95, max(0.05, kv / free)), 2)

    def kv_bytes_per_gpu(self, group: NodeGroup) -> int | None:
        tokens = self.deployment.kv_capacity_tokens
        if tokens is None:
            return None
        return math.ceil(tokens * self.kv_bytes_per_token_per_gpu(group))

    def cost(self, group: NodeGroup) -> NodeCost:
        chip = self.catalog.chips[group.chip]
        return NodeCost.for_group(self.model, chip, group, self.deployment)

    @staticmethod
    def gpus(group: NodeGroup) -> int:
        return group.stage_gpus * group.pp

    def kv_bytes_per_token_per_gpu(self, group: NodeGroup) -> float:
        """One token's KV bytes on each GPU of a node: every copy kept, spread over its GPUs."""
        cost = self.cost(group)
        return cost.kv_bytes_per_token * cost.kv_copies / self.gpus(group)


_TRANSPORTS = (  # (name or description word, transport); first match wins
    ("nvlink", "nvlink"),
    ("hccs", "hccs"),
    ("ib-", "ib"),
    ("infiniband", "ib"),
    ("roce", "roce"),
    ("rdma", "roce"),
    ("tcp", "tcp"),
)


_TRANSPORT_NAMES = {
    "nvlink": "NVLink",
    "hccs": "HCCS",
    "ib": "RDMA over InfiniBand",
    "roce": "RDMA over RoCE",
    "tcp": "TCP",
}


def _transport(name: str, description: str) -> str:
    for text in (name.lower(), description.lower()):
        for word, transport in _TRANSPORTS:
            if word in text:
                return transport
    return "roce"


def _quote(word: str) -> str:
    """Shell quoting that keeps $VARIABLES expandable: bare when safe, double quotes around a
    word holding a variable, single quotes otherwise (JSON)."""
    if re.fullmatch(r"[A-Za-z0-9_./:=,@%+-]+", word):
        return word
    if "$" in word and re.fullmatch(r"[A-Za-z0-9_./:=,@%+${}-]+", word):
        return f'"{word}"'
    return "'" + word.replace("'", "'\"'\"'") + "'"


# -- LMDeploy ------------------------------------------------------------------------------------

_LMDEPLOY_PROXY_PORT = 8000


def _lmdeploy(plan: _Plan) -> tuple[list[LaunchStep], list[str]]:
    dep = plan.deployment
    notes: list[str] = []
    steps: list[LaunchStep] = []
    use_proxy = plan.disagg or len(plan.instances) > 1
    if use_proxy:
        plan.add_variable("PROXY_HOST", "proxy.example", "the host the proxy runs on")
        proxy = ["lmdeploy", "serve", "proxy", "--server-name", "0.0.0.0"]
        proxy += ["--server-port", str(_LMDEPLOY_PROXY_PORT)]
        proxy += ["--serving-strategy", "DistServe" if plan.disagg else "Hybrid"]
        proxy += ["--routing-strategy", "min_expected_latency"]
        if plan.disagg:
            if plan.transport == "nvlink":
                proxy += ["--migration-protocol", "NVLINK"]
            else:
                proxy += ["--migration-protocol", "RDMA"]
                proxy += ["--link-type", "IB" if plan.transport == "ib" else "RoCE"]
        steps.append(LaunchStep("proxy", "on $PROXY_HOST", tuple(proxy)))
    for port, inst in enumerate(plan.instances, 23333):
        argv = [plan.visible(inst.group), "lmdeploy", "serve", "api_server", "$MODEL"]
        argv += ["--backend", "pytorch", "--server-port", str(port), "--tp", str(inst.group.tp)]
        if plan.ascend(inst.group):
            argv += ["--device", "ascend"]
        if plan.disagg:
            argv += ["--role", "Prefill" if inst.role == "prefill" else "Decode"]
            argv += ["--migration-backend", "DLSlime"]
        if use_proxy:
            argv += ["--proxy-url", f"http://$PROXY_HOST:{_LMDEPLOY_PROXY_PORT}"]
        argv += ["--max-batch-size", str(dep.max_batch)]
        budget = dep.chunk_tokens if dep.mode == "chunked" else dep.prefill_token_budget
        argv += ["--max-prefill-token-num", str(budget)]
        argv += ["--cache-max-entry-count", str(plan.kv_fraction_of_free(inst.group))]
        if dep.decode_exec == "eager" and inst.role != "prefill":
            argv += ["--eager-mode"]
        steps.append(LaunchStep(inst.title, f"on ${inst.host_var}", tuple(argv)))
    if plan.disagg:
        notes.append(
            "PD disaggregation runs on LMDeploy's PyTorch backend only; the KV cache migrates "
            "through DLSlime (`pip install dlslime`), the default --migration-backend."
        )
        if plan.transport == "tcp":
            notes.append(
                f"{dep.link} is TCP, and the proxy's --migration-protocol offers only RDMA and "
                "NVLINK: this preset models RDMA that silently fell back to TCP, so RDMA is "
                "written here. Fix the RDMA path (ibstat, ibv_devinfo) rather than run it as is."
            )
        if plan.transport == "hccs":
            notes.append(
                "HCCS: the proxy's --migration-protocol offers RDMA and NVLINK only; RDMA is "
                "written. How KV moves over HCCS depends on your DLInfer/DLSlime build (Ascend "
                "Direct)."
            )
    if any(inst.group.pp > 1 for inst in plan.instances):
        notes.append(
            "The deployment uses pipeline stages, and `lmdeploy serve api_server` has no "
            "pipeline-parallel flag (lmdeploy/cli/serve.py): this sketch runs each instance with "
            "TP only. Use vLLM or SGLang for pipeline parallelism, or a TP-only deployment."
        )
    notes.append(
        "--cache-max-entry-count is the KV cache's share of the GPU memory left after the "
        "weights, computed here from the deployment's memory settings "
        f"(gpu_memory_utilization {dep.gpu_memory_utilization}"
        + (f", kv_capacity_tokens {dep.kv_capacity_tokens}" if dep.kv_capacity_tokens else "")
        + ")."
    )
    if dep.mode == "chunked":
        notes.append(
            f"chunked: LMDeploy has no Sarathi-style switch; --max-prefill-token-num "
            f"{dep.chunk_tokens} caps the prompt tokens of one prefill iteration, the closest "
            "equivalent of the deployment's chunk size."
        )
    return steps, notes


# -- vLLM ----------------------------------------------------------------------------------------


def _vllm(plan: _Plan) -> tuple[list[LaunchStep], list[str]]:
    dep = plan.deployment
    steps: list[LaunchStep] = []
    notes: list[str] = []
    connector = "NixlConnector"
    for port, inst in enumerate(plan.instances, 8100):
        argv = [plan.visible(inst.group), "vllm", "serve", "$MODEL", "--host", "0.0.0.0"]
        argv += ["--port", str(port), "--tensor-parallel-size", str(inst.group.tp)]
        if inst.group.pp > 1:
            argv += ["--pipeline-parallel-size", str(inst.group.pp)]
        argv += ["--max-num-seqs", str(dep.max_batch)]
        if dep.mode == "chunked":
            argv += ["--enable-chunked-prefill", "--max-num-batched-tokens", str(dep.chunk_tokens)]
        else:
            argv += ["--max-num-batched-tokens", str(dep.prefill_token_budget)]
            if dep.mode == "colocated":  # without chunking vLLM wants budget >= context
                argv += ["--no-enable-chunked-prefill"]
                argv += ["--max-model-len", str(dep.prefill_token_budget)]
        argv += ["--gpu-memory-utilization", str(dep.gpu_memory_utilization)]
        kv_bytes = plan.kv_bytes_per_gpu(inst.group)
        if kv_bytes is not None:
            argv += ["--kv-cache-memory-bytes", str(kv_bytes)]
        if dep.decode_exec == "eager" and inst.role != "prefill":
            argv += ["--enforce-eager"]
        if plan.disagg:
            config = {"kv_connector": connector, "kv_role": "kv_both"}
            argv += ["--kv-transfer-config", json.dumps(config, separators=(",", ":"))]
        steps.append(LaunchStep(inst.title, f"on ${inst.host_var}", tuple(argv)))
    if plan.disagg:
        notes.append(
            "The router is yours: vLLM ships no PD proxy entry point. It must send each request "
            'to a prefill instance (max_tokens=1, kv_transfer_params {"do_remote_decode": '
            "true}) and pass the returned kv_transfer_params on to a decode instance; vLLM's "
            "source has example proxies for NixlConnector, not an installed command."
        )
        notes.append(
            "NixlConnector moves KV with NIXL (UCX picks RDMA, NVLink or TCP); "
            "`pip install nixl`. With kv_role kv_both each instance can send and receive. "
            "MooncakeConnector is the other registered RDMA connector."
        )
        if plan.transport == "tcp":
            notes.append(f"{dep.link} is TCP: NIXL/UCX will use TCP, and KV transfer is slow.")
    if any(plan.ascend(inst.group) for inst in plan.instances):
        notes.append(
            "Ascend NPUs run vLLM through the vllm-ascend plugin, whose own connectors and "
            "device flags are not part of vLLM's source and are not checked here."
        )
    if dep.mode == "colocated":
        notes.append(
            "colocated: --no-enable-chunked-prefill turns chunked prefill off (vLLM enables it by "
            "default). Without chunking vLLM refuses a --max-num-batched-tokens below the "
            "context length, so --max-model-len is set to the same budget; raise both together "
            "for longer prompts."
        )
    if kv_note := _kv_note(
        plan, "--kv-cache-memory-bytes (per GPU; vLLM then ignores --gpu-memory-utilization)"
    ):
        notes.append(kv_note)
    if len(plan.instances) > 1 and not plan.disagg:
        notes.append("Put any HTTP load balancer in front of the servers (vLLM ships none).")
    return steps, notes


def _kv_note(plan: _Plan, flag: str) -> str | None:
    tokens = plan.deployment.kv_capacity_tokens
    if tokens is None:
        return None
    return f"kv_capacity_tokens {tokens} is written as {flag}."


# -- SGLang --------------------------------------------------------------------------------------

_SGLANG_ROUTER_PORT = 8000
_SGLANG_BOOTSTRAP_PORT = 8998


def _sglang(plan: _Plan) -> tuple[list[LaunchStep], list[str]]:
    dep = plan.deployment
    steps: list[LaunchStep] = []
    notes: list[str] = []
    backend = {"nvlink": "nixl", "hccs": "ascend", "tcp": "mooncake_tcp"}.get(
        plan.transport, "mooncake"
    )
    workers: list[tuple[_Instance, int]] = []
    for port, inst in enumerate(plan.instances, 30000):
        argv = [plan.visible(inst.group), "python", "-m", "sglang.launch_server"]
        argv += ["--model-path", "$MODEL", "--host", "0.0.0.0", "--port", str(port)]
        argv += ["--tp-size", str(inst.group.tp)]
        if inst.group.pp > 1:
            argv += ["--pp-size", str(inst.group.pp)]
        if plan.ascend(inst.group):
            argv += ["--device", "npu"]
        if plan.disagg:
            argv += ["--disaggregation-mode", inst.role]
            argv += ["--disaggregation-transfer-backend", backend]
            if backend == "mooncake":
                plan.add_variable(
                    "IB_DEVICE", "mlx5_0", "the RDMA NIC(s) for KV, e.g. mlx5_0,mlx5_1"
                )
                argv += ["--disaggregation-ib-device", "$IB_DEVICE"]
            if inst.role == "prefill":
                argv += ["--disaggregation-bootstrap-port", str(_SGLANG_BOOTSTRAP_PORT)]
        argv += ["--max-running-requests", str(dep.max_batch)]
        if dep.mode == "chunked":
            argv += ["--chunked-prefill-size", str(dep.chunk_tokens), "--enable-mixed-chunk"]
        elif dep.mode == "colocated":
            argv += ["--chunked-prefill-size", "-1"]
        else:
            argv += ["--chunked-prefill-size", str(dep.prefill_token_budget)]
        argv += ["--mem-fraction-static", str(dep.gpu_memory_utilization)]
        if dep.kv_capacity_tokens is not None:
            argv += ["--max-total-tokens", str(dep.kv_capacity_tokens)]
        if dep.decode_exec == "eager" and inst.role != "prefill":
            argv += ["--cuda-graph-backend-decode", "disabled"]
        steps.append(LaunchStep(inst.title, f"on ${inst.host_var}", tuple(argv)))
        workers.append((inst, port))
    if plan.disagg or len(workers) > 1:
        plan.add_variable("ROUTER_HOST", "router.example", "the host the router runs on")
        router = ["python", "-m", "sglang_router.launch_router"]
        if plan.disagg:
            router += ["--pd-disaggregation"]
            for inst, port in workers:
                url = f"http://${inst.host_var}:{port}"
                if inst.role == "prefill":
                    router += ["--prefill", url, str(_SGLANG_BOOTSTRAP_PORT)]
            for inst, port in workers:
                if inst.role == "decode":
                    router += ["--decode", f"http://${inst.host_var}:{port}"]
        else:
            router += ["--worker-urls", *(f"http://${i.host_var}:{p}" for i, p in workers)]
        router += ["--host", "0.0.0.0", "--port", str(_SGLANG_ROUTER_PORT)]
        steps.append(LaunchStep("router", "on $ROUTER_HOST", tuple(router)))
        notes.append(
            "The router is the sglang-router package (`pip install sglang-router`); add "
            "--mini-lb for its Python mini load balancer (debugging only)."
        )
    if plan.disagg:
        transports = {
            "mooncake": "Mooncake over RDMA on $IB_DEVICE (`pip install mooncake-transfer-engine`)",
            "nixl": "NIXL (UCX picks NVLink inside the node; `pip install nixl`)",
            "ascend": "the Ascend transfer backend",
            "mooncake_tcp": f"Mooncake over TCP: {dep.link} has no RDMA, so KV transfer is slow",
        }
        notes.append(f"KV moves with {transports[backend]}.")
    if dep.mode == "colocated":
        notes.append("colocated: --chunked-prefill-size -1 turns chunked prefill off.")
    if dep.mode == "chunked":
        notes.append(
            "chunked: --enable-mixed-chunk lets prefill chunks share a batch with decode, as "
            "Sarathi-Serve does."
        )
    if kv_note := _kv_note(plan, "--max-total-tokens"):
        notes.append(kv_note)
    return steps, notes

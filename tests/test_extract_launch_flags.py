"""scripts/extract_launch_flags.py reads each engine's way of defining flags: LMDeploy's argparse
helpers, vLLM's dataclass-driven kwargs (a bool field is --X and --no-X), SGLang's annotated
ServerArgs fields. The real sources are not here (CI has no network), so these are miniatures
written the way each engine writes its own, small enough to check by eye."""

from __future__ import annotations

import importlib.util
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def extractor() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "extract_launch_flags", ROOT / "scripts" / "extract_launch_flags.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


LMDEPLOY_SERVE = """
class SubCliServe:
    @staticmethod
    def add_parser_api_server():
        parser = SubCliServe.subparsers.add_parser("api_server")
        parser.add_argument("--proxy-url", type=str, default=None)
        pt_group = parser.add_argument_group("PyTorch engine arguments")
        ArgumentHelper.tp(pt_group)
        ArgumentHelper.role(pt_group)
        ArgumentHelper.device(pt_group)

    @staticmethod
    def add_parser_proxy():
        parser = SubCliServe.subparsers.add_parser("proxy")
        parser.add_argument("--link-type", type=str, choices=["RoCE", "IB"], default="RoCE")
        parser.add_argument("--disable-gdr", action="store_true")
"""
LMDEPLOY_UTILS = """
class ArgumentHelper:
    @staticmethod
    def tp(parser):
        return parser.add_argument("--tp", type=int, default=1)

    @staticmethod
    def role(parser):
        return parser.add_argument("--role", type=str, choices=["Hybrid", "Prefill", "Decode"])

    @staticmethod
    def device(parser, default: str = "cuda", choices: list[str] = ["cuda", "ascend"]):
        return parser.add_argument("--device", type=str, default=default, choices=choices)
"""


def test_lmdeploy_flags_come_from_the_helpers_each_subcommand_calls(
    extractor: ModuleType, tmp_path: Path
) -> None:
    source = extractor.Source(_tree(tmp_path, {
        "lmdeploy/cli/serve.py": LMDEPLOY_SERVE, "lmdeploy/cli/utils.py": LMDEPLOY_UTILS,
    }))  # fmt: skip
    commands = extractor.lmdeploy_flags(source)
    api = commands["lmdeploy serve api_server"]["flags"]
    assert set(api) == {"--proxy-url", "--tp", "--role", "--device"}  # not the proxy's flags
    assert api["--tp"] == {"file": "lmdeploy/cli/utils.py", "takes_value": True}
    assert api["--proxy-url"]["file"] == "lmdeploy/cli/serve.py"
    assert api["--role"]["choices"] == ["Decode", "Hybrid", "Prefill"]
    assert api["--device"]["choices"] == ["ascend", "cuda"]  # from the helper's default argument
    proxy = commands["lmdeploy serve proxy"]["flags"]
    assert proxy["--disable-gdr"]["takes_value"] is False
    assert proxy["--link-type"]["choices"] == ["IB", "RoCE"]


VLLM_ARGS = """
@dataclass
class EngineArgs:
    tensor_parallel_size: int = 1
    enable_chunked_prefill: bool | None = None
    kv_transfer_config: KVTransferConfig | None = None

    @staticmethod
    def add_cli_args(parser):
        parallel_group.add_argument(
            "--tensor-parallel-size", "-tp", **parallel_kwargs["tensor_parallel_size"]
        )
        scheduler_group.add_argument(
            "--enable-chunked-prefill",
            **{**scheduler_kwargs["enable_chunked_prefill"], "default": None},
        )
        vllm_group.add_argument("--kv-transfer-config", **vllm_kwargs["kv_transfer_config"])
"""
VLLM_CLI = """
class BaseFrontendArgs:
    chat_template: str | None = None

class FrontendArgs(BaseFrontendArgs):
    host: str | None = None
    port: int = 8000
    enable_ssl_refresh: bool = False

def make_arg_parser(parser):
    parser.add_argument("model_tag", type=str, nargs="?")
    parser.add_argument("--headless", action="store_true", default=False)
    return parser
"""
VLLM_FACTORY = """
KVConnectorFactory.register_connector(
    "NixlConnector", "vllm.distributed.kv_transfer.kv_connector.v1.nixl", "NixlConnector"
)
KVConnectorFactory.register_connector("MooncakeConnector", "m", "MooncakeConnector")
"""
VLLM_KV = """
KVProducer = Literal["kv_producer", "kv_both"]
KVConsumer = Literal["kv_consumer", "kv_both"]
KVRole = Literal[KVProducer, KVConsumer]
"""


def test_vllm_flags_follow_the_engine_args_field_types(
    extractor: ModuleType, tmp_path: Path
) -> None:
    wheel = tmp_path / "vllm-0.0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:  # read from a wheel, as the record was
        archive.writestr("vllm/engine/arg_utils.py", VLLM_ARGS)
        archive.writestr("vllm/entrypoints/common/cli_args.py", VLLM_CLI)
        archive.writestr("vllm/distributed/kv_transfer/kv_connector/factory.py", VLLM_FACTORY)
        archive.writestr("vllm/config/kv_transfer.py", VLLM_KV)
    commands, values = extractor.vllm_flags(extractor.Source(wheel))
    flags = commands["vllm serve"]["flags"]
    assert flags["--tensor-parallel-size"]["takes_value"] is True and "-tp" in flags
    assert flags["--enable-chunked-prefill"]["takes_value"] is False
    assert flags["--no-enable-chunked-prefill"]["takes_value"] is False  # BooleanOptionalAction
    assert flags["--kv-transfer-config"]["json_keys"] == ["kv_connector", "kv_role"]
    assert flags["--port"] == {"file": "vllm/entrypoints/common/cli_args.py", "takes_value": True}
    assert flags["--enable-ssl-refresh"]["takes_value"] is False and "--headless" in flags
    assert values["kv_connector"]["choices"] == ["MooncakeConnector", "NixlConnector"]
    assert values["kv_role"]["choices"] == ["kv_both", "kv_consumer", "kv_producer"]


SGLANG_FIELDS = """
from sglang.srt.arg_groups.choices import DISAGG_TRANSFER_BACKEND_CHOICES

@dataclasses.dataclass
class DisaggArgs:
    disaggregation_mode: A[Literal["null", "prefill", "decode"], "PD role."] = "null"
    disaggregation_transfer_backend: A[
        str, Arg(help="Backend.", choices=DISAGG_TRANSFER_BACKEND_CHOICES)
    ] = "mooncake"
    tp_size: A[int, Arg(help="TP.", aliases=["--tensor-parallel-size"])] = 1
    enable_mixed_chunk: A[bool, "Mix chunks."] = False
    disable_cuda_graph: A[bool, Arg(no_cli=True)] = False
    hidden: int = 0
"""
SGLANG_CHOICES = 'DISAGG_TRANSFER_BACKEND_CHOICES = ["mooncake", "nixl"]\n'
SGLANG_SERVER_ARGS = """
class ServerArgs:
    @staticmethod
    def add_cli_args(parser):
        add_cli_args_from_dataclass(parser, ServerArgs)
        parser.add_argument("--disable-cuda-graph", action=DeprecatedStoreTrueAction)
"""


def test_sglang_flags_come_from_annotated_server_args_fields(
    extractor: ModuleType, tmp_path: Path
) -> None:
    source = extractor.Source(_tree(tmp_path, {  # laid out as in the GitHub repository
        "python/sglang/srt/arg_groups/fields/disagg.py": SGLANG_FIELDS,
        "python/sglang/srt/arg_groups/choices.py": SGLANG_CHOICES,
        "python/sglang/srt/server_args.py": SGLANG_SERVER_ARGS,
    }))  # fmt: skip
    flags = extractor.sglang_flags(source)["python -m sglang.launch_server"]["flags"]
    where = "sglang/srt/arg_groups/fields/disagg.py"
    assert flags["--disaggregation-mode"] == {
        "file": where, "takes_value": True, "choices": ["null", "prefill", "decode"],
    }  # fmt: skip
    assert flags["--disaggregation-transfer-backend"]["choices"] == ["mooncake", "nixl"]
    assert flags["--tp-size"] == flags["--tensor-parallel-size"]
    assert flags["--enable-mixed-chunk"]["takes_value"] is False
    assert "--hidden" not in flags  # not an A[...] field
    assert flags["--disable-cuda-graph"]["file"] == "sglang/srt/server_args.py"  # the by-hand one

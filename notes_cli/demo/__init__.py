"""`pdnotes demo`: the whole story against the bundled engine in a throw-away sandbox (engine,
config, doctor, common mistakes, smoke, notes, the bridge, the PD experiment), each step calling
the same core as its command and returning a `step.Step`.

Imports any core below it (clients, doctor, smoke, notes, bridge, engine, gateway). Must not
import cli/ or render/ (render/demo draws the steps), and no core imports demo/.
"""

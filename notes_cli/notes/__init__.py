"""Notes: the user's reading turned into a checked, cited comparison table.

The path of `pdnotes notes generate`, in order: `documents` reads each source (a file or a
URL: `pdf`, `webpage`), `reading` fits them to the model (whole, cut by `sources`, or
map-reduce over `passages`), `kits` holds the prompt, columns and rubric, `generate` asks the
model through gateway/ and repairs its answer, `tables` and `extract` find the table in it,
`rubric`, `terms`, `claims` and `grounding` judge it (`check` joins them into one verdict),
and `export`, `cards` and `report` write it out. `compare` sets two notes side by side;
`tokens` estimates lengths for all of them. `knowledge` is the bundled engine's answer to a
kit's prompt (engine/core uses it).

Imports gateway/ and clients/ (the model is reached like any gateway), the bottom layer and
resources; never cli/ or render/, which draw what this package decides.
"""

"""Claude Code (npm `@anthropic-ai/claude-code`), what pdnotes knows of it gathered here while it
moves into a folder of its own (`clients.registry.NOT_MOVED`): its settings writer (`config`,
`managed`), its layers and setup (`setup`), its static checks (`checks`, `env`)."""

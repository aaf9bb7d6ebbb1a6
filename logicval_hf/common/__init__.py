"""Small helpers shared by every room: atomic writes, Markdown tables, the name registry, Hub access,
optional extras and configuration from the environment."""

"""Figure modules: each reads results rows (a DataFrame) and draws one paper panel; none runs a mechanism."""

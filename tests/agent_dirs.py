"""The settings of the agents added in issue 15, each pointed at an empty folder of a test (never the real
HOME's sessions): setting name -> folder name under the test's root."""

OTHER_AGENT_DIRS = {
    "copilot_dir": "copilot-session-state",
    "qwen_dir": "qwen-projects",
    "pi_dir": "pi-sessions",
    "kimi_dir": "kimi-code-sessions",
    "kimi_legacy_dir": "kimi-sessions",
    "cline_dir": "cline-sessions",
    "cursor_dir": "cursor-projects",
    "cursor_state_db": "cursor-state.vscdb",
    "opencode_db": "opencode.db",
}

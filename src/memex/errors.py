"""The short hierarchy of errors memex raises; the CLI turns each into one clear line."""


class MemexError(Exception):
    """Base of every error memex reports to the user."""

    exit_code = 1


class UserError(MemexError):
    """The user asked for something that cannot be done (bad argument, unknown session…)."""

    exit_code = 2


class ConfigError(UserError):
    """The configuration file or an environment override is invalid."""


class StoreError(MemexError):
    """The database cannot be opened or used."""

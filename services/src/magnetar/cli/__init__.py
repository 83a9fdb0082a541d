"""Process entry points and ``magnetar`` sub-commands: argument parsing and wiring only."""

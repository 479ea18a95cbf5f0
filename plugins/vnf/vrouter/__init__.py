"""vrouter: a Vyatta-style declarative router model rendered to Linux kernel routing."""

"""Unit tests of the teams rules (memmy_kb.domain.teams), on the fakes."""

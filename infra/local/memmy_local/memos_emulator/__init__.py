"""The MemOS emulator: MemOS's knowledge-base API on loopback for the local stack and the tests (docs/memos.md)."""

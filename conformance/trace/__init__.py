"""The JSONL trace of a run: its format, reading it, and the recording proxy that writes one."""

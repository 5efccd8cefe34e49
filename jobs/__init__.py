"""SoftGrade's process control, by role: `cli/` (the command line), `worker/` (the queue's
runner, executors and slots) and `services/` (the lab services the pages use)."""

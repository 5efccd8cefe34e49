"""The worker: the job queue's runner, its executors (local slot processes, Ray actors) and
the slots that train runs. It writes results to the store; the pages never import it."""

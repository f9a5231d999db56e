"""The adversarial suite's machinery (tests/fuzz/ holds its tests): the campaign runner
and worker process, and the case generators each worker kind runs."""

"""The processes a candidate runs in, and the trusted one that judges it.

fork_server.py (the fork server), runner.py (jobs and their watchdog), worker.py (a candidate's job),
reference.py / reference_client.py (the reference process and the verifier's side of it),
transfer.py (tensors across, one way), locks.py (the device lock), audit.py (the audit hook and
scrubbed environment), compute_guard.py, poison.py and launches.py (what runs around forward),
fingerprint.py (the compiled code a candidate launched, so that a duplicate is not timed again).
"""

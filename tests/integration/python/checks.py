"""What the Python API's checks share (guards_test.py, elastic_api_test.py, sigint_test.py): FAIL
lines naming the rank, ok lines from rank 0, and the check that a call is refused.

    import checks
    checks.rank = world.rank
    before = checks.failures
    checks.refused(lambda: ..., tutti.ErrorCode.INVALID_ARGUMENT, ["words"], "what")
    checks.ok("what held", before)
    return 1 if checks.failures else 0
"""
import tutti

failures = 0
rank = None


def fail(message):
    global failures
    failures += 1
    print(f"FAIL: rank {rank}: {message}", flush=True)


def ok(message, failures_before=None):
    """Rank 0 reports a check that held: one that added no failure since failures_before."""
    if rank == 0 and (failures_before is None or failures == failures_before):
        print(f"ok: {message}", flush=True)


def refused(call, code, words, what):
    """call() must raise tutti.Error with `code` and every one of `words` in its message."""
    try:
        call()
    except tutti.Error as e:
        if e.code != code or not all(w in str(e) for w in words):
            fail(f"{what}: raised {e.code} {e!r}, want {code} naming {words}")
        return
    except Exception as e:  # noqa: BLE001 - any other exception is the bug being tested
        fail(f"{what}: raised {type(e).__name__}: {e}, want tutti.Error {code}")
        return
    fail(f"{what}: no error, want tutti.Error {code} naming {words}")

"""The tally the CLI tests share: one PASS/FAIL line per check, `N passed, M failed` last."""

passed = 0
failed = 0


def check(name, cond, detail=""):
    global passed, failed
    if cond:
        passed += 1
        print(f"PASS {name}")
    else:
        failed += 1
        print(f"FAIL {name}: {detail}")


def check_run(name, cond, proc=None):
    """check() with a finished process's exit status, stdout and stderr as the detail."""
    detail = ""
    if proc is not None:
        detail = (f"\n     exit {proc.returncode}\n     stdout: {proc.stdout.strip()[:2000]}"
                  f"\n     stderr: {proc.stderr.strip()[:2000]}")
    check(name, cond, detail)


def summary() -> int:
    """Prints the totals; the exit status: 1 if anything failed."""
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0

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


def summary() -> int:
    """Prints the totals; the exit status: 1 if anything failed."""
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0

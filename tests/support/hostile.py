"""Helpers shared by the hostile-input tests (tests/catalogue/test_hostile_input.py, tests/provider/test_registry.py): how the CLI
is run in-process, and what an error it refuses an input with must look like. The ``items`` fixture (one
good item in a JSONL file) is in conftest.py."""

from __future__ import annotations

from judgesdk.cli.app import main

SECRET = "sk-canary-0123456789abcdef"  # a key that must never reach another host, stderr, stdout or a file
REFUSING = "http://127.0.0.1:9/v1"  # nothing listens on port 9: a provider there fails fast if ever called
CLEARED_ENV = ("JUDGESDK_PROVIDER", "JUDGESDK_MODEL", "JUDGESDK_BASE_URL", "JUDGESDK_METHOD", "OPENAI_API_KEY", "ANTHROPIC_API_KEY")


def run(argv, capsys):
    """``judgesdk ARGV`` in this process: (exit code, stdout, stderr)."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code, err, *needles, secret=SECRET, status=3):
    """Exit ``status`` (3: usage, input or configuration error), one line on stderr holding every needle, no
    traceback, no secret. Every command's errors start with ``judgesdk`` (meta-eval's: ``judgesdk meta-eval:``)."""
    assert code == status, err
    assert err.startswith("judgesdk") and err.strip().count("\n") == 0, err
    assert "Traceback" not in err and secret not in err, err
    for needle in needles:
        assert needle in err, (needle, err)


# Text a judged output (or its source, id, notes) may hold that a page showing it must keep inert: shown as text,
# never run or parsed as markup (judgesdk view, tests/view/; the property test runs over these strings).
HOSTILE_TEXTS = (
    "<script>window.__judgesdk_pwned = 1</script>",
    "</script><script>window.__judgesdk_pwned = 1</script>",
    '<img src=x onerror="window.__judgesdk_pwned = 1">',
    '<svg onload="window.__judgesdk_pwned = 1"></svg>',
    '" onmouseover="window.__judgesdk_pwned = 1" x="',
    "</textarea><script>window.__judgesdk_pwned = 1</script>",
    "</style><script>window.__judgesdk_pwned = 1</script>",
    "<!-- <script>window.__judgesdk_pwned = 1</script> -->",
    '<a href="javascript:window.__judgesdk_pwned = 1">click</a>',
    "javascript:window.__judgesdk_pwned = 1",
    '<iframe srcdoc="<script>parent.__judgesdk_pwned = 1</script>"></iframe>',
    "{{constructor.constructor('window.__judgesdk_pwned = 1')()}}",
    "\u202eevil\u202c gnp.exe",  # right-to-left override: reorders what follows it
    "\u2067isolated\u2069 and \u2066ltr\u2069",  # bidi isolates
    "zero\u200bwidth\u200c\u200djoiners\ufeff",  # invisible characters
    "\u0000nul and \u001b[31mescape",  # control characters
    "&lt;script&gt; already escaped &amp;",
    "\u2028line separator\u2029paragraph separator",  # end a JavaScript string literal in older engines
)

#!/usr/bin/env python3
"""escape.py - report text never drives the user's terminal.

A report is read from a file that anyone may have written (a job's output folder, a copy from
another machine): its strings can hold a newline, an escape sequence (ESC [ 2 J, OSC 0 ;...
BEL, CSI as the C1 control U+009B) or, in a corrupt file, bytes that are not UTF-8. Every verb
that prints text must show such a string escaped (\\n, \\x1b, \\u009b, \\xff) and on its line,
never raw (docs/security.md, "Reports read back").

From tests/cli/data/valid.json and valid_v2.json this makes "hostile" reports in which every
string the verbs may print (host, argv, tool version, reason, signal, capture backends and
warnings, a dropped-event key, device names, leak meaning, kinds, APIs, libraries, error names,
frames' modules, symbols and files) starts with control characters, and runs every verb that
prints text on them, colour off (a pipe, NO_COLOR): standard output and standard error must be
valid UTF-8 without a single control character but the newlines that end lines, and have as
many lines as the same verb prints for the clean report (the strings are longer, never split).
`report` also runs on a terminal (a pseudo-terminal, 80 columns, colour on): there the only
escape sequences are the tool's own colour codes, and no line is wider than the terminal.
A file holding bytes that are not UTF-8 is refused by every verb in one clean line. The HTML
page holds no "</script>" of the report's.

usage: escape.py CLI DATA_DIR WORK_DIR
"""
import fcntl
import json
import os
import pty
import re
import shutil
import struct
import subprocess
import sys
import termios
import tty
import unicodedata

# Starts every hostile string: a newline, a tab and a carriage return, ESC [31m (red), a
# screen clear, an OSC title (ESC ] 0 ; ... BEL), DEL, the C1 controls CSI and NEL as UTF-8,
# and a </script> for the HTML page. No '/', so module basenames stay as they were; file
# names keep their ending (.py decides a v1 Python frame), so every report keeps its shape.
PAYLOAD = "\n\t\r\x1b[31m\x1b[2J\x1b]0;owned\x07\x7f\u009b1m\u0085</script>"
# Escaped as the verbs show it (the newline, the tab and the CR are the first three).
SHOWN = "\\n\\t\\r\\x1b[31m\\x1b[2J\\x1b]0;owned\\x07\\x7f\\u009b1m\\u0085</script>"
# Keys whose strings decide how a report is read, not what is shown.
KEEP = {"schema", "type", "address", "layer", "build_id", "python"}
# Allowed in text output: newline only (the tool writes no tab).
CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")
# The tool's own colour codes (cmd_report.c).
COLOUR = re.compile(r"\x1b\[(?:0|1|31|33|36)m")

failures = []


def fail(msg):
    """msg may quote what a verb printed: shown as ascii() lines, so a raw escape sequence of a
    broken build never reaches the terminal of whoever reads the test's output."""
    msg = "\n".join(ascii(ln)[1:-1] for ln in msg.split("\n"))
    failures.append(msg)
    print("FAIL: " + msg, file=sys.stderr)


def hostile(value, key=None):
    if isinstance(value, dict):
        return {k: hostile(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [hostile(v, key) for v in value]
    if isinstance(value, str) and key not in KEEP:
        return PAYLOAD + value
    return value


def make(src, dst, host=None):
    rep = json.load(open(src))
    rep["process"]["signal"] = "SIGTERM"  # shown on the reason line
    rep = hostile(rep)
    rep["capture"]["dropped"][PAYLOAD + "key"] = 5
    if host is not None:
        rep["process"]["hostname"] = host
    with open(dst, "w", encoding="utf-8") as f:
        json.dump(rep, f, ensure_ascii=False, indent=1)  # U+009B and U+0085 raw in the file
    return dst


def clean_copy(src, dst, host=None):
    rep = json.load(open(src))
    rep["process"]["signal"] = "SIGTERM"
    rep["capture"]["dropped"]["key"] = 5
    if host is not None:
        rep["process"]["hostname"] = host
    with open(dst, "w") as f:
        json.dump(rep, f, indent=1)
    return dst


def run(cli, args, cwd, rc=None):
    env = dict(os.environ, NO_COLOR="1", GPUMEMTRACE_LOG="quiet")
    p = subprocess.run([cli] + args, capture_output=True, cwd=cwd, env=env, timeout=60)
    if rc is not None and p.returncode != rc:
        fail(f"{args}: exit {p.returncode}, expected {rc}\n{p.stderr[-2000:]!r}")
    return p


def decoded(what, data):
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        fail(f"{what}: not valid UTF-8 ({e}): {data[max(0, e.start - 60):e.end + 20]!r}")
        return data.decode("utf-8", "replace")


def check_clean(what, text):
    m = CONTROL.search(text)
    if m:
        at = m.start()
        fail(f"{what}: raw control character {m.group()!r} at {at}: {text[max(0, at - 80):at + 40]!r}")


def columns(text):
    """The columns a terminal gives text: two for an East Asian wide or fullwidth character,
    none for a combining mark."""
    return sum(0 if unicodedata.combining(ch) else
               2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def pty_run(cli, args, cwd, cols, rows=50):
    """Runs the CLI with standard output on a pseudo-terminal of cols columns and rows rows, in
    raw mode (no newline translation): returns what it wrote there, its standard error and its
    exit status (cli.top_verb.fits uses it too)."""
    master, slave = pty.openpty()
    tty.setraw(slave)
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    env = dict(os.environ, TERM="xterm", GPUMEMTRACE_LOG="quiet")
    env.pop("NO_COLOR", None)
    p = subprocess.Popen([cli] + args, stdout=slave, stderr=subprocess.PIPE, cwd=cwd, env=env)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the other side closed
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    err = p.stderr.read()
    p.wait(timeout=60)
    return out, err, p.returncode


def main():
    cli, data, work = sys.argv[1], sys.argv[2], sys.argv[3]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    v1, v2 = os.path.join(data, "valid.json"), os.path.join(data, "valid_v2.json")
    # The hostile reports, and one under a file name that is itself hostile (a merge of a
    # folder's *.json lists such names).
    h1 = make(v1, os.path.join(work, "h1.json"))
    h2 = make(v2, os.path.join(work, "h2.json"))
    # A host name with non-ASCII characters past merge's 20-column cut: cut between characters.
    h3 = make(v1, os.path.join(work, "h3.json"), host="n\u0153ud\x1b[2J" + "\u00e9" * 30)
    hname = os.path.join(work, "bad\x1b[31m\nname.json")
    shutil.copy(h1, hname)
    c1 = clean_copy(v1, os.path.join(work, "c1.json"))
    c2 = clean_copy(v2, os.path.join(work, "c2.json"))
    c3 = clean_copy(v1, os.path.join(work, "c3.json"), host="n\u0153ud" + "\u00e9" * 30)
    cname = os.path.join(work, "cleanname.json")
    shutil.copy(c1, cname)

    # (verb arguments on the hostile reports, the same on the clean ones, expected status)
    runs = []
    for h, c in ((h1, c1), (h2, c2), (hname, cname)):
        runs += [
            (["report", h], ["report", c], 0),
            (["report", "--top", "100", h], ["report", "--top", "100", c], 0),
            (["report", "--device", "0", h], ["report", "--device", "0", c], 0),
            # the dropped-event key in check's line: unknown, since the tracer dropped events
            (["check", h, "--max-leak-bytes", "1G"], ["check", c, "--max-leak-bytes", "1G"], 1),
            (["check", h, "--max-leak-bytes", "1", "--no-errors", "--max-fragmentation", "0.1",
              "--max-peak-bytes", "1"],
             ["check", c, "--max-leak-bytes", "1", "--no-errors", "--max-fragmentation", "0.1",
              "--max-peak-bytes", "1"], 1),
            (["export", h, "--format", "folded"], ["export", c, "--format", "folded"], 0),
            (["export", h, "--format", "folded", "--stacks", "peak"],
             ["export", c, "--format", "folded", "--stacks", "peak"], 0),
            (["export", h, "--format", "prometheus"], ["export", c, "--format", "prometheus"], 0),
        ]
    runs += [
        (["diff", h1, h2], ["diff", c1, c2], 0),
        (["diff", h2, h1], ["diff", c2, c1], 0),
        (["diff", "--top", "100", hname, h2], ["diff", "--top", "100", cname, c2], 0),
        (["merge", h1, h2, h3], ["merge", c1, c2, c3], 0),
        (["merge", h1], ["merge", c1], 0),
        # one process twice: a warning line that names its host
        (["merge", h1, hname], ["merge", c1, cname], 0),
        (["merge", "-o", os.path.join(work, "hm.json"), h1, h2],
         ["merge", "-o", os.path.join(work, "cm.json"), c1, c2], 0),
    ]
    for hargs, cargs, rc in runs:
        hp = run(cli, hargs, work, rc)
        cp = run(cli, cargs, work, rc)
        for stream in ("stdout", "stderr"):
            what = f"gpumemtrace {' '.join(hargs)} ({stream})"
            text = decoded(what, getattr(hp, stream))
            check_clean(what, text)
            want = decoded(what + " on the clean report", getattr(cp, stream)).count("\n")
            if text.count("\n") != want:
                fail(f"{what}: {text.count(chr(10))} lines, {want} for the clean report:\n"
                     f"{text}\n--- clean:\n{getattr(cp, stream).decode(errors='replace')}")

    # What the user typed, echoed in a usage error or a file error: one escaped line on
    # standard error, whatever the verb (an option, a value, a missing file's name).
    bad = "x" + PAYLOAD
    typed = [["report", "--" + bad, c1], ["report", "--top", bad, c1], ["check", "--" + bad, c1],
             ["check", c1, "--max-leak-bytes", bad], ["diff", "--" + bad, c1, c2],
             ["export", c1, "--format", bad], ["merge", "--" + bad, c1], ["top", "--" + bad],
             ["run", "--" + bad, "true"], ["run", "--output", "", "true"],
             ["symbolize", "--" + bad, c1], ["report", os.path.join(work, bad)], [bad]]
    for args in typed:
        p = run(cli, args, work)
        # the same typed without the payload: as many lines (an unknown verb adds the usage)
        plain = run(cli, [a.replace(PAYLOAD, "") for a in args], work)
        what = f"gpumemtrace {ascii(args)} (stderr)"
        text = decoded(what, p.stderr)
        check_clean(what, text)
        first = text.split("\n")[0]
        if (p.returncode == 0 or text.count("\n") != plain.stderr.decode().count("\n") or
                not first.startswith("gpumemtrace: ")):
            fail(f"{what}: expected an error line and a failure status, got "
                 f"{p.returncode}:\n{text}")
        elif "" not in args and "x" + SHOWN not in first:
            fail(f"{what}: the argument is not shown escaped on the error line:\n{text}")

    # The merged report, read back by report (its ranks) and symbolize (stderr only: its
    # output is JSON).
    for hargs, cargs in ((["report", os.path.join(work, "hm.json")],
                          ["report", os.path.join(work, "cm.json")]),):
        hp, cp = run(cli, hargs, work, 0), run(cli, cargs, work, 0)
        text = decoded(" ".join(hargs), hp.stdout)
        check_clean(" ".join(hargs), text)
        if text.count("\n") != cp.stdout.decode().count("\n"):
            fail(f"{hargs}: line count differs from the clean merged report's")
    p = run(cli, ["symbolize", "-o", os.path.join(work, "hs.json"), h1], work, 0)
    check_clean("symbolize (stderr)", decoded("symbolize (stderr)", p.stderr))

    # What is shown is the escaped text, not nothing.
    out = decoded("report h1", run(cli, ["report", h1], work, 0).stdout)
    for want in (f"host {SHOWN}node07", f"program   {SHOWN}python3 {SHOWN}train.py",
                 f"warning:  {SHOWN}libpython", f"{SHOWN}NVIDIA H200", f"-> {SHOWN}forward",
                 f" {SHOWN}cudaMalloc", f"{SHOWN}cudaErrorMemoryAllocation (2)",
                 f"(tool {SHOWN}0.1.0", f" {SHOWN}key 5",
                 f"reason    {SHOWN}exit ({SHOWN}SIGTERM)",
                 f"{SHOWN}device memory on GPU 0"):
        if want not in out:
            fail(f"report does not show {want!r}:\n{out}")
    out = decoded("report bad name", run(cli, ["report", hname], work, 0).stdout)
    if "bad\\x1b[31m\\nname.json" not in out.splitlines()[0]:
        fail(f"report does not show the file's name escaped on its first line: {out.splitlines()[0]!r}")
    out = decoded("report h2", run(cli, ["report", h2], work, 0).stdout)
    if not re.search(f"^  {re.escape(SHOWN)}trainer +11.00 MiB +3.00 MiB$", out, re.M):
        fail(f"report: the library row does not show the whole name escaped:\n{out}")

    # merge: the host column is 20 characters, cut between characters, in every row.
    out = decoded("merge h1 h3", run(cli, ["merge", h1, h3], work, 0).stdout)
    rows = [ln for ln in out.splitlines() if re.match(r"  \d+ ", ln)]
    if len(rows) != 2:
        fail(f"merge: expected 2 rank rows:\n{out}")
    for ln in rows:
        host = ln[9:29]
        if not re.match(r" \d+ ", ln[29:]) or not (host.startswith("\\n\\t\\r") or
                                                   host.startswith("n\u0153ud\\x1b[2J")):
            fail(f"merge: the host column is not 20 characters: {ln!r}")
    if rows and not rows[1][9:29] == "n\u0153ud\\x1b[2J" + "\u00e9" * 9:
        fail(f"merge: the non-ASCII host name is not cut at 20 characters: {rows[1]!r}")

    # prometheus: a parser reads the label back as the text the terminal shows.
    out = decoded("prometheus", run(cli, ["export", h1, "--format", "prometheus"], work, 0).stdout)
    esc = SHOWN.replace("\\", "\\\\").replace('"', '\\"') + "node07"
    if f'host="{esc}"' not in out:
        fail(f"prometheus: host label not escaped as expected:\n{out[:2000]}")

    # folded: one line per stack, escapes shown (and ';', the separator, as ':').
    out = decoded("folded", run(cli, ["export", h1, "--format", "folded"], work, 0).stdout)
    if SHOWN.replace(";", ":") + "alloc_workspace;" not in out:
        fail(f"folded: frame names not escaped as expected:\n{out}")

    # HTML: the report's "</script>" never closes the data element; no raw control character
    # but the page's own newlines.
    p = run(cli, ["export", h1, "--format", "html"], work, 0)
    page = decoded("html", p.stdout)
    data = page[page.index('id="gmt-data">'):]
    data = data[:data.index("</script>")]
    if "owned" not in data or "\\u003c/script>" not in data:
        fail("html: the report's strings are not in the page's data element as expected")
    try:
        json.loads(data[len('id="gmt-data">'):])
    except ValueError as e:
        fail(f"html: the page's data element is not whole JSON (a </script> broke it?): {e}")

    # A terminal, colour on: only the tool's colour codes, no line wider than the terminal.
    for path in (h1, h2, hname):
        out, err, rc = pty_run(cli, ["report", "--top", "100", path], work, 80)
        if rc != 0:
            fail(f"report on a terminal: exit {rc}: {err!r}")
        text = decoded("report on a terminal", out)
        if not COLOUR.search(text):
            fail("report on a terminal: no colour codes: the test did not get a terminal")
        plain = COLOUR.sub("", text)
        check_clean("report on a terminal (colour codes removed)", plain)
        for ln in plain.split("\n"):
            if "   at " in ln or "-> " in ln:
                if len(ln) > 80:
                    fail(f"report on a terminal: a stack line of {len(ln)} characters: {ln!r}")

    # Wide characters (CJK: two columns a character) and combining marks (none): lines cut to
    # the terminal's columns, not its characters, and table columns padded by columns. Until
    # session 51 a character counted one column, and such a line wrapped on the terminal.
    wide = json.load(open(v2))
    for st in wide["stacks"].values():
        for fr in st["frames"]:
            if fr.get("symbol"):
                fr["symbol"] = "模型" * 30 + "_e\u0301" + fr["symbol"]
    wide["process"]["hostname"] = "节点" * 15
    hw = os.path.join(work, "hw.json")
    with open(hw, "w", encoding="utf-8") as f:
        json.dump(wide, f, ensure_ascii=False, indent=1)
    out, err, rc = pty_run(cli, ["report", "--top", "100", hw], work, 81)
    plain = COLOUR.sub("", decoded("report of wide characters on a terminal", out))
    lines = [ln for ln in plain.split("\r\n" if "\r\n" in plain else "\n") if "模型" in ln]
    if rc != 0 or not lines:
        fail(f"report of wide characters on a terminal: exit {rc}, {len(lines)} lines: {err!r}")
    for ln in lines:
        if columns(ln) > 81 or (ln.endswith("...") and columns(ln) < 79):
            fail(f"report on a terminal of 81 columns: a line of {columns(ln)} columns: {ln!r}")
    if not any(ln.endswith("...") for ln in lines):
        fail(f"report on a terminal: no wide line cut: {lines}")
    out = decoded("merge hw c1", run(cli, ["merge", hw, c1], work, 0).stdout)
    rows = [ln for ln in out.splitlines() if re.match(r"  \d+ ", ln)]
    for ln in rows:
        if "节点" in ln and not (ln[9:19] == "节点" * 5 and re.match(r" \d+ ", ln[19:])):
            fail(f"merge: the host column of wide characters is not 20 columns: {ln!r}")
    if not any("节点" in ln for ln in rows):
        fail(f"merge: no row with the wide host name:\n{out}")

    # JSON outputs hold the hostile strings as \u escapes: no raw control character (C0, DEL,
    # C1) anywhere but the layout's newlines, and a parser reads the strings back whole.
    hs = os.path.join(work, "hs.json")
    outs = {"report --json": run(cli, ["report", "--json", h1], work, 0).stdout,
            "merge -o": open(os.path.join(work, "hm.json"), "rb").read(),
            "symbolize -o": open(hs, "rb").read()}
    for fmt in ("speedscope", "perfetto"):
        outs[f"export {fmt}"] = run(cli, ["export", h1, "--format", fmt], work, 0).stdout
    def strings_of(v):
        if isinstance(v, str):
            yield v
        elif isinstance(v, dict):
            for k, x in v.items():
                yield k
                yield from strings_of(x)
        elif isinstance(v, list):
            for x in v:
                yield from strings_of(x)

    for what, data in outs.items():
        text = decoded(what, data)
        m = re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", text)  # tabs and newlines: layout
        if m:
            fail(f"{what}: raw control character {m.group()!r} at {m.start()}")
        try:
            doc = json.loads(text)
        except ValueError as e:
            fail(f"{what}: not JSON: {e}")
            continue
        if not any(PAYLOAD in x for x in strings_of(doc)):
            fail(f"{what}: no string holds the hostile text whole")

    # A report that is not UTF-8 (a raw \xff, a raw C1 byte, a cut sequence): refused by every
    # verb in one line, and that line is clean.
    raw = open(h1, "rb").read()
    bad = os.path.join(work, "bad_utf8.json")
    with open(bad, "wb") as f:
        f.write(raw.replace(b"node07", b"node\xff\x9b\xc307", 1))
    for args in (["report", bad], ["report", "--json", bad], ["check", bad, "--max-leak-bytes", "1"],
                 ["diff", bad, h1], ["diff", h1, bad], ["merge", h1, bad],
                 ["export", bad, "--format", "folded"], ["symbolize", "-o", "-", bad]):
        p = run(cli, args, work, 2)
        err = decoded(f"{args} (stderr)", p.stderr)
        check_clean(f"{args} (stderr)", err)
        if err.count("\n") != 1 or not err.startswith("gpumemtrace: "):
            fail(f"{args}: expected one line on stderr, got {err!r}")
        check_clean(f"{args} (stdout)", decoded(f"{args} (stdout)", p.stdout))

    if failures:
        print(f"{len(failures)} failure(s)", file=sys.stderr)
        return 1
    print("ok: report text is escaped by every verb")
    return 0


if __name__ == "__main__":
    sys.exit(main())

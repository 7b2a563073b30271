"""The agent's reaper: a tiny process between the sidecar and the agent that outlives neither.

    python -I -S reaper.py FD -- COMMAND [ARG...]

The sidecar starts it in a new session, so it leads the process group the
agent runs in, with FD: one end of a socket pair whose other end only the
sidecar holds. The reaper

- becomes a child subreaper (Linux), so the agent's orphaned descendants,
  even those that left the group with setsid(), are re-parented to it and
  stay findable;
- starts the agent (same stdin, stdout, stderr; same process group) and
  answers `ok PID` or `error ERRNO MESSAGE` on FD;
- when the agent exits, ends every descendant left (SIGTERM, a short grace,
  SIGKILL) and exits with the agent's status (same code, or same signal);
- on `term`/`kill` from the sidecar, sends that signal to every descendant;
- on EOF on FD or a new parent (the sidecar died, even by SIGKILL: the
  kernel closes its end), ends everything the same way and exits.

It survives SIGTERM, SIGINT and SIGHUP (the sidecar's signal to the group
reaches the agent; the reaper stays to finish the job). It runs with -I -S,
outside the sidecar's environment, and imports little (it delays every agent
start): no subprocess, no selectors, raw descriptors.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time

LEFTOVER_GRACE = 1.0  # after the agent exited: its helpers' time to end on SIGTERM
ORPHANED_GRACE = 2.0  # after the sidecar died: the agent's time to end on SIGTERM
_PR_SET_CHILD_SUBREAPER = 36


def _kill(pid: int, sig: int) -> None:
    # try/except, not contextlib.suppress: every import here delays the agent's start.
    try:  # noqa: SIM105
        os.kill(pid, sig)
    except OSError:
        pass  # already gone


def _become_subreaper() -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except Exception:
        pass  # without it, helpers that left the group and lost their parent go unseen


def descendants(root: int) -> list[int]:
    """Live (not zombie) descendants of `root`, from /proc; [] where there is no /proc."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != b"Z":
            children.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


class Reaper:
    def __init__(self, channel: int) -> None:
        self.channel = channel
        self.parent = os.getppid()
        self.agent_pid: int | None = None
        self.agent_status: int | None = None
        self.sidecar_gone = False

    # -- signals and children --------------------------------------------------

    def _signal_all(self, sig: int) -> None:
        """`sig` to every descendant; to the whole group too where /proc cannot list them."""
        found = descendants(os.getpid())
        if not found and not os.path.isdir("/proc/self"):
            _kill(-os.getpgrp(), sig)  # our own handler ignores SIGTERM; SIGKILL ends us last
        for pid in found:
            _kill(pid, sig)

    def _reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.agent_pid:
                self.agent_status = status

    def _end_all(self, grace: float, only_the_agent: bool) -> None:
        """SIGTERM everyone, wait up to `grace` (for the agent, or for all), then SIGKILL the rest."""
        self._signal_all(signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            self._reap()
            if self.agent_status is not None if only_the_agent else not descendants(os.getpid()):
                break
            time.sleep(0.02)
        for _ in range(200):
            self._reap()
            if not descendants(os.getpid()):
                break
            self._signal_all(signal.SIGKILL)
            time.sleep(0.01)
        self._reap()

    # -- the loop ---------------------------------------------------------------

    def _on_channel(self) -> None:
        try:
            data = os.read(self.channel, 256)
        except OSError:
            data = b""
        if not data:
            self.sidecar_gone = True
            return
        for word in data.split():
            if word == b"term":
                self._signal_all(signal.SIGTERM)
            elif word == b"kill":
                self._signal_all(signal.SIGKILL)

    def watch(self, wakeup: int) -> int:
        """Until the agent exits (its wait status) or the sidecar is gone (0)."""
        poller = select.poll()
        poller.register(self.channel, select.POLLIN)
        poller.register(wakeup, select.POLLIN)
        while True:
            for fd, _ in poller.poll(1000):
                if fd == self.channel:
                    self._on_channel()
                    if self.sidecar_gone:
                        poller.unregister(self.channel)
                else:
                    try:  # noqa: SIM105
                        os.read(wakeup, 4096)
                    except BlockingIOError:
                        pass
            self._reap()
            if os.getppid() != self.parent:
                self.sidecar_gone = True
            if self.agent_status is not None:
                self._end_all(LEFTOVER_GRACE, only_the_agent=False)
                return self.agent_status
            if self.sidecar_gone:
                self._end_all(ORPHANED_GRACE, only_the_agent=True)
                return 0

    def start(self, command: list[str]) -> bool:
        try:
            # posix_spawnp: the agent is found on this environment's PATH, as exec would.
            self.agent_pid = os.posix_spawnp(command[0], command, os.environ)
        except OSError as exc:
            message = f"error {exc.errno or 0} {exc.strerror or exc}\n"
            os.write(self.channel, message.encode("utf-8", "replace"))
            return False
        os.write(self.channel, f"ok {self.agent_pid}\n".encode())
        # The agent's stdin and stdout are its own: EOF on them must not wait for us.
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
        os.close(devnull)
        return True


def _exit_like(status: int) -> None:
    """Exit with the agent's status: the same exit code, or death by the same signal."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig not in (signal.SIGKILL, signal.SIGSTOP):  # those have no handler to reset
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        time.sleep(1)
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1
    os._exit(code)


def main(argv: list[str]) -> None:
    if len(argv) < 4 or argv[2] != "--":
        sys.stderr.write("usage: reaper.py FD -- COMMAND [ARG...]\n")
        sys.exit(2)
    channel = int(argv[1])
    os.set_inheritable(channel, False)  # the agent must not hold the sidecar's lifeline
    # Handlers, not SIG_IGN: a handled signal is reset to default in the agent at exec.
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: None)
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    os.set_blocking(wake_read, False)
    signal.set_wakeup_fd(wake_write, warn_on_full_buffer=False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    _become_subreaper()
    reaper = Reaper(channel)
    if not reaper.start(argv[3:]):
        os._exit(127)
    status = reaper.watch(wake_read)
    if reaper.sidecar_gone and reaper.agent_status is None:
        os._exit(0)
    _exit_like(status)


if __name__ == "__main__":
    main(sys.argv)

"""What a test does in the VS Code workbench, in the words of a user.

Every wait has a generous timeout; when one fails, a screenshot is taken and
its path is part of the failure message.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from tests.editors.vscode.harness import WAIT_S, CodeServer, Driver, DriverError, normalize

STATUS_ITEM = '[id="acp-sidecar.acp-sidecar.acpSidecar.status"]'
TOAST = ".notifications-toasts .notification-toast"
QUICK_INPUT = ".quick-input-widget"
QUICK_ROW = ".quick-input-widget .quick-input-list .monaco-list-row"
DIALOG = ".monaco-dialog-box"
CHAT_INPUT = "#input"
CHAT_LOG = "#log"


class Workbench:
    def __init__(self, server: CodeServer, driver: Driver, artifacts: Path) -> None:
        self.server = server
        self.driver = driver
        self.artifacts = artifacts
        self._shots = 0

    # ------------------------------------------------------------------ failures
    def screenshot(self, label: str) -> Path | None:
        self._shots += 1
        self.artifacts.mkdir(parents=True, exist_ok=True)
        path = self.artifacts / f"{self._shots:02d}-{re.sub(r'[^A-Za-z0-9_.-]+', '-', label)[:60]}.png"
        try:
            self.driver.call("screenshot", timeout=30.0, path=str(path))
        except DriverError:
            return None
        return path

    def milestone(self, label: str) -> None:
        """A screenshot of what the user sees now, when ACP_SIDECAR_VSCODE_SCREENSHOTS is set."""
        if os.environ.get("ACP_SIDECAR_VSCODE_SCREENSHOTS"):
            self.screenshot(label)

    def keep_logs(self) -> Path:
        """Copies the logs next to the screenshots (pytest's temp dirs do not last)."""
        logs = self.artifacts / "logs"
        shutil.rmtree(logs, ignore_errors=True)
        logs.mkdir(parents=True)
        for name in ("code-server.log", "driver.log"):
            if (self.server.root / name).is_file():
                shutil.copy(self.server.root / name, logs / name)
        if (self.server.user_data / "logs").is_dir():
            shutil.copytree(self.server.user_data / "logs", logs / "vscode")
        return logs

    def fail(self, message: str) -> NoReturn:
        shot = self.screenshot("failure")
        where = f"\nscreenshot: {shot}" if shot else "\n(no screenshot: the browser did not answer)"
        raise AssertionError(f"{message}{where}\nlogs: {self.keep_logs()}")

    def call(self, cmd: str, timeout: float = WAIT_S, **args: Any) -> Any:
        try:
            return self.driver.call(cmd, timeout=timeout, **args)
        except DriverError as exc:
            self.fail(str(exc))

    def wait_until(
        self, what: str | Callable[[], str], check: Callable[[], bool], timeout: float = WAIT_S
    ) -> None:
        """`what` may be a callable: the message is then made at the failure (with what was seen last)."""
        deadline = time.monotonic() + timeout
        while not check():
            if time.monotonic() > deadline:
                self.fail(f"timed out after {timeout:.0f} s waiting for {what() if callable(what) else what}")
            time.sleep(0.25)

    # ------------------------------------------------------------------ generic
    def open(self) -> None:
        self.call("launch", timeout=180.0, url=self.server.url, chromium=str(self.server.tools.chromium))

    def wait_for(self, selector: str, scope: str = "page", timeout: float = WAIT_S, **more: Any) -> None:
        self.call("waitFor", timeout=timeout, scope=scope, selector=selector, **more)

    def texts(self, selector: str, scope: str = "page", **more: Any) -> list[str]:
        return [normalize(t) for t in self.call("texts", scope=scope, selector=selector, **more)]

    def click(self, selector: str, scope: str = "page", **more: Any) -> None:
        self.call("click", scope=scope, selector=selector, **more)

    def hover(self, selector: str, scope: str = "page", **more: Any) -> None:
        self.call("hover", scope=scope, selector=selector, **more)

    def press(self, key: str, selector: str | None = None, scope: str = "page") -> None:
        if selector:
            self.call("press", scope=scope, selector=selector, key=key)
        else:
            self.call("press", key=key)

    # ------------------------------------------------------------------ palette and pickers
    def run_command(self, title: str, timeout: float = WAIT_S) -> None:
        """F1, type the command's title, pick that row. Retried: the palette lists an
        extension's commands only once the extension host has registered it, and a palette
        closed before it was used is opened again."""
        deadline = time.monotonic() + timeout
        while True:
            self.press("Escape")
            self.press("F1")
            try:
                # The palette may close again at once: a view the last command revealed takes
                # the focus a moment later (a quick input closes when it loses the focus).
                self.driver.call(
                    "fill", timeout=10.0, scope="page", selector=f"{QUICK_INPUT} input", text=f">{title}"
                )
                self.driver.call("click", timeout=5.0, scope="page", selector=QUICK_ROW, hasText=title)
                return
            except DriverError as exc:
                if time.monotonic() > deadline:
                    self.fail(f"command {title!r} not in the palette after {timeout:.0f} s: {exc}")

    def pick(self, label: str) -> None:
        """Clicks the quick pick row whose label contains `label`."""
        self.click(QUICK_ROW, hasText=label)

    def click_row_button(self, row_text: str, tooltip: str) -> None:
        """Clicks a quick pick row's item button (shown while the row is hovered). The row is
        hovered at its left end: over its middle, the tooltip of its long description (a path)
        comes up and covers the row, so the hover never lands (seen in CI)."""
        self.hover(QUICK_ROW, hasText=row_text, position={"x": 4, "y": 4})
        self.click(QUICK_ROW, hasText=row_text, inner=f'.action-label[aria-label="{tooltip}"]')

    def dialog_buttons(self) -> list[str]:
        """The buttons of the modal dialog on screen (showWarningMessage with modal)."""
        self.wait_for(DIALOG)
        return self.texts(f"{DIALOG} .dialog-buttons .monaco-button")

    def dialog_text(self) -> str:
        found = self.texts(DIALOG)
        return found[0] if found else ""

    def quick_pick_rows(self, containing: str | None = None) -> list[str]:
        """The rows of the quick pick on screen; with `containing`, once a row holds that text
        (right after a pick, the previous quick pick may still be the one shown)."""
        self.wait_for(QUICK_ROW)
        if containing is None:
            return self.texts(QUICK_ROW)
        rows: list[str] = []

        def check() -> bool:
            rows[:] = self.texts(QUICK_ROW)
            return any(containing in row for row in rows)

        self.wait_until(lambda: f"a quick pick row with {containing!r} (last seen {rows!r})", check)
        return rows

    def input_box(self, text: str) -> None:
        """Answers a showInputBox."""
        self.wait_for(f"{QUICK_INPUT} input")
        self.call("fill", selector=f"{QUICK_INPUT} input", text=text)
        self.press("Enter", selector=f"{QUICK_INPUT} input")

    # ------------------------------------------------------------------ status bar and notifications
    def status_text(self) -> str:
        """The ACP status bar item's text (its codicon renders as no text)."""
        found = self.texts(STATUS_ITEM)
        return found[0].strip() if found else ""

    def wait_status(self, pattern: str, timeout: float = WAIT_S) -> str:
        regex = re.compile(pattern)
        seen: list[str] = []

        def check() -> bool:
            seen[:] = [self.status_text()]
            return bool(regex.search(seen[0]))

        self.wait_until(lambda: f"status bar item matching {pattern!r} (last seen {seen!r})", check, timeout)
        return seen[0]

    def toasts(self) -> list[str]:
        return self.texts(TOAST)

    def wait_toast(self, text: str, timeout: float = WAIT_S) -> None:
        self.wait_for(TOAST, hasText=text, timeout=timeout)

    def click_toast_button(self, toast_text: str, button: str) -> None:
        self.click(TOAST, hasText=toast_text, inner=".monaco-button", innerText=button)

    def error_toasts(self) -> list[str]:
        return [t for t in self.texts(f"{TOAST}:has(.codicon-error)") if t.strip()]

    # ------------------------------------------------------------------ chat view
    def open_chat(self) -> None:
        self.run_command("ACP: Open Chat")
        # The input exists before the view's script has attached its key handlers.
        self.wait_for(f"body[data-ready] {CHAT_INPUT}", scope="chat", timeout=90.0)

    def chat_send(self, text: str) -> None:
        self.call("fill", scope="chat", selector=CHAT_INPUT, text=text)
        self.press("Enter", selector=CHAT_INPUT, scope="chat")

    def chat_text(self) -> str:
        found = self.texts(CHAT_LOG, scope="chat")
        return found[0] if found else ""

    def wait_chat(self, selector: str, has_text: str = "", timeout: float = WAIT_S) -> None:
        self.wait_for(selector, scope="chat", timeout=timeout, hasText=has_text)

    def conversation(self) -> str:
        """The conversation the chat shows: the session's transcript document, rendered."""
        found = self.texts("#conversation", scope="chat")
        return found[0] if found else ""

    def wait_conversation(self, text: str, timeout: float = WAIT_S) -> None:
        seen = [""]

        def shows() -> bool:
            seen[0] = self.conversation()
            return text in seen[0]

        what = lambda: f"{text!r} in the conversation (last seen {seen[0][-1500:]!r})"  # noqa: E731
        self.wait_until(what, shows, timeout)

    def chat_header(self) -> str:
        found = self.texts("#header", scope="chat")
        return found[0] if found else ""

    # ------------------------------------------------------------------ editors
    def open_file(self, name: str) -> None:
        """Quick Open (Ctrl+P) a workspace file by name."""
        self.press("Escape")
        self.press("Control+P")
        self.wait_for(f"{QUICK_INPUT} input")
        self.call("fill", selector=f"{QUICK_INPUT} input", text=name)
        self.pick(name)
        self.wait_for(".editor-instance .monaco-editor .view-lines")

    def editor_text(self) -> str:
        found = self.texts(".editor-instance .monaco-editor .view-lines")
        return found[0] if found else ""

    def editor_lines(self) -> list[str]:
        """The active editor's lines as shown, top to bottom, blank ones included (all of a short file)."""
        found = self.call("textsTopDown", selector=".editor-instance .monaco-editor .view-lines .view-line")
        return [normalize(line) for line in found]

    def diff_sides(self) -> dict[str, str]:
        """What the diff editor shows now on each side ("" for a side not rendered yet)."""
        sides = {}
        for side in ("original", "modified"):
            found = self.texts(f".monaco-diff-editor .editor.{side} .view-lines")
            sides[side] = found[0] if found else ""
        return sides

    def describe(self) -> str:
        return json.dumps({"status": self.status_text(), "toasts": self.toasts()}, ensure_ascii=False)

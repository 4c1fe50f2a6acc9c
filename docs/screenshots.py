"""Take the documentation's screenshots from a running demo, so that they show the pages as they
are. It starts nothing itself: run the demo first, on a database of its own, then point this at it.

    DATABASE_URL=sqlite:////tmp/shots.sqlite3 .venv/bin/python manage.py demo
    DATABASE_URL=sqlite:////tmp/shots.sqlite3 .venv/bin/python manage.py runserver 127.0.0.1:8765
    .venv/bin/python docs/screenshots.py --base-url http://127.0.0.1:8765

It walks the tutorial (docs/tutorial.md) as the demo's users: both annotators label the first
items of the demo study with the keyboard (differently on some, so that there are
disagreements), the adjudicator resolves one, the manager opens the agreement page and the
paper's tables and exports the dataset. The labels are made up for the pictures: use a
throwaway database, never one with research data. PNGs go to docs/img/ (or --output), made
smaller with pngquant when it is installed (apt-get install pngquant).
"""

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# The demo's accounts (labeling/management/commands/demo.py).
PASSWORDS = {
    "manager": "manager-demo",
    "annotator1": "annotator1-demo",
    "annotator2": "annotator2-demo",
    "adjudicator": "adjudicator-demo",
}
WIDTH, HEIGHT = 1280, 800
AUTOSAVE_DELAY_MS = 800  # web/static/web/labeling.js


class Shooter:
    def __init__(self, browser, base_url: str, output: Path, study: str) -> None:
        self.browser = browser
        self.base_url = base_url.rstrip("/")
        self.output = output
        self.study = study
        self.taken: list[Path] = []

    def url(self, path: str) -> str:
        return f"{self.base_url}{path}"

    def signed_in(self, username: str) -> Page:
        context = self.browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
        page = context.new_page()
        page.set_default_timeout(30_000)
        page.goto(self.url("/accounts/login/"))
        page.get_by_label("Username").fill(username)
        page.get_by_label("Password").fill(PASSWORDS[username])
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(self.url("/"))
        return page

    def shoot(self, page: Page, name: str, *, full_page: bool = False) -> None:
        page.wait_for_load_state("networkidle")
        path = self.output / f"{name}.png"
        page.screenshot(path=str(path), full_page=full_page)
        self.taken.append(path)
        print(f"wrote {path}")


def label_next(page: Page, shooter: Shooter, keys: list[str]) -> str:
    """Claim the next item from the queue and label it with the keyboard; the item's URL."""
    page.goto(shooter.url(f"/studies/{shooter.study}/queue/"))
    page.get_by_role("button", name="Label next item").click()
    page.wait_for_url(re.compile(rf"/studies/{shooter.study}/items/\d+/$"))
    item_url = page.url
    for key in keys:
        page.keyboard.press(key)
    return item_url


def submit(page: Page, item_url: str) -> None:
    page.keyboard.press("Control+Enter")
    page.wait_for_url(lambda url: url != item_url)


def answers(item: int, annotator: int) -> list[str]:
    """Keys for one item: screening, symptom, root cause, fix pattern, then on to the stage.
    The second annotator differs on the root cause of every third item and on the symptom of
    every fifth, as people do."""
    symptom = 1 + item % 3
    root_cause = 1 + item % 4
    if annotator == 2 and item % 3 == 0:
        root_cause = 1 + (item + 1) % 4
    if annotator == 2 and item % 5 == 4:
        symptom = 1 + (item + 1) % 3
    stage = 1 + item % 2
    return ["1", "j", str(symptom), "j", str(root_cause), "j", "1", "j", "j", "j", "j", str(stage)]


def take(shooter: Shooter, items: int) -> None:
    study = shooter.study

    first = shooter.signed_in("annotator1")
    shooter.shoot(first, "home")
    for item in range(items):
        keys = answers(item, 1)
        if item == 0:
            # The first item as a person sees it: screening and symptom chosen, the draft saved.
            item_url = label_next(first, shooter, keys[:4])
            first.wait_for_timeout(AUTOSAVE_DELAY_MS + 400)
            shooter.shoot(first, "labeling")
            for key in keys[4:]:
                first.keyboard.press(key)
        else:
            item_url = label_next(first, shooter, keys)
        submit(first, item_url)
    first.goto(shooter.url(f"/studies/{study}/queue/"))
    shooter.shoot(first, "queue")

    second = shooter.signed_in("annotator2")
    for item in range(items):
        submit(second, label_next(second, shooter, answers(item, 2)))

    manager = shooter.signed_in("manager")
    manager.goto(shooter.url(f"/studies/{study}/"))
    shooter.shoot(manager, "study-overview", full_page=True)
    manager.goto(shooter.url("/studies/new/"))
    shooter.shoot(manager, "study-new")
    manager.goto(shooter.url(f"/studies/{study}/agreement/"))
    shooter.shoot(manager, "agreement")

    adjudicator = shooter.signed_in("adjudicator")
    adjudicator.goto(shooter.url(f"/studies/{study}/disagreements/"))
    shooter.shoot(adjudicator, "disagreements")
    adjudicator.locator("table.disagreements tbody tr a", has_text="Resolve").first.click()
    adjudicator.wait_for_url(re.compile(r"/items/\d+/resolve/"))
    shooter.shoot(adjudicator, "resolve")
    decision = adjudicator.get_by_role("form", name=re.compile(r"^Decision on ")).first
    decision.locator("input[type=radio]").first.check()
    decision.get_by_role("textbox").first.fill("the maintainers' fix names the cause")
    decision.get_by_role("button", name=re.compile(r"^Save the gold label")).click()
    adjudicator.wait_for_load_state("networkidle")

    manager.goto(shooter.url(f"/studies/{study}/report/"))
    shooter.shoot(manager, "report")
    # A cross-tab with its heatmap, below the list of tables.
    heading = manager.get_by_role("heading", name=re.compile(r"^Symptom . Root cause$"))
    heading.evaluate("heading => heading.scrollIntoView()")
    shooter.shoot(manager, "report-crosstab")
    manager.goto(shooter.url(f"/studies/{study}/export/"))
    manager.get_by_role("button", name="Start export").click()
    manager.wait_for_load_state("networkidle")
    manager.goto(shooter.url(f"/studies/{study}/export/"))
    shooter.shoot(manager, "export")
    manager.goto(shooter.url("/codebooks/"))
    shooter.shoot(manager, "codebooks")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8000")
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "img")
    parser.add_argument("--study", default="demo")
    parser.add_argument("--items", type=int, default=10, help="items each annotator labels")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    arguments = parser.parse_args()
    arguments.output.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=arguments.chromium, args=CHROMIUM_FLAGS
        )
        shooter = Shooter(browser, arguments.base_url, arguments.output, arguments.study)
        try:
            take(shooter, arguments.items)
        finally:
            browser.close()
    if shutil.which("pngquant"):  # optional: a palette of 256 colours, a third of the size
        subprocess.run(  # noqa: S603 (our own file names)
            ["pngquant", "--force", "--skip-if-larger", "--ext", ".png", "--quality", "70-95"]
            + [str(path) for path in shooter.taken],
            check=False,
        )
    total = sum(path.stat().st_size for path in shooter.taken)
    print(f"{len(shooter.taken)} screenshots, {total / 1024:.0f} KB")


if __name__ == "__main__":
    sys.exit(main())

"""The operator's console in a real headless Chromium (run by run.sh).

Checks, each counted: the page refuses a wrong token (an MCP principal's) and the API
answers 401 to it; signed in with the admin token, a task an MCP client creates appears and
turns completed live (no reload); owner names and status messages holding markup render as
text; filters; paging through over 1,000 tasks with the cursors; a cancel and a fail through
the confirmation dialog, the store (tasks/get as the owner) showing the result; the
instance drained through its dialog (the task it held is handed over and not claimed back)
and undrained (claimed again); a purge of every finished task through its dialog. Screenshots
(desktop and phone) into ADMIN_PAGE_SCREENSHOTS. Ends with "N passed, N failed".
"""

import http.client
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

from playwright.sync_api import expect, sync_playwright

MCP_URL = os.environ["MCP_URL"]
ADMIN_URL = os.environ["ADMIN_URL"].rstrip("/")
ADMIN_TOKEN = os.environ["ADMIN_TOKEN"]
ALICE, BOB, MARKUP = (os.environ[n] for n in ("ALICE_TOKEN", "BOB_TOKEN", "MARKUP_TOKEN"))
SHOTS = os.environ.get("ADMIN_PAGE_SCREENSHOTS", "")
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
BULK = 1000

passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   {name}")
    else:
        failed += 1
        print(f"FAIL {name} {detail}")


def step(name, fn):
    """Runs one check whose failure is an exception (a Playwright expectation)."""
    try:
        fn()
        check(name, True)
    except Exception as err:  # noqa: BLE001 - reported as the check's failure
        check(name, False, f"{type(err).__name__}: {str(err)[:400]}")


class Mcp:
    """A 2025-11-25 session over Streamable HTTP, one kept-alive connection."""

    def __init__(self, token):
        url = urllib.parse.urlsplit(MCP_URL)
        self.path = url.path
        self.conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
        self.token = token
        self.session = None
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "admin-page-test", "version": "0"}})
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def post(self, message):
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream"}
        if self.session:
            headers["Mcp-Session-Id"] = self.session
            headers["MCP-Protocol-Version"] = "2025-11-25"
        for attempt in (1, 2):
            try:
                self.conn.request("POST", self.path, json.dumps(message), headers)
                response = self.conn.getresponse()
                body = response.read().decode()
                break
            except (http.client.HTTPException, ConnectionError):
                # The server closed the idle kept-alive connection: a new one.
                self.conn.close()
                if attempt == 2:
                    raise
        self.session = self.session or response.getheader("Mcp-Session-Id")
        if not body.strip():
            return None
        if body.lstrip().startswith("{"):
            return json.loads(body)
        messages = [json.loads(line[5:]) for line in body.splitlines()
                    if line.startswith("data:") and line[5:].strip()]
        return [m for m in messages if "id" in m and "method" not in m][-1]

    def request(self, method, params):
        self.next_id += 1
        answer = self.post({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                            "params": params})
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer["result"]

    def sleep_task(self, ms):
        result = self.request("tools/call", {"name": "sleep", "arguments": {"ms": ms},
                                             "task": {"ttl": 3_600_000}})
        return result["task"]["taskId"]

    def status(self, task_id):
        return self.request("tasks/get", {"taskId": task_id})["status"]


def api_status(path, token):
    request = urllib.request.Request(ADMIN_URL + path,
                                     headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as err:
        return err.code


def api_json(path):
    request = urllib.request.Request(ADMIN_URL + path,
                                     headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def refresh_instances(page):
    """Signs in again (the instances are read at sign-in and every 15 s)."""
    page.reload()
    expect(page.locator("#app")).to_be_visible()
    expect(page.locator("#instances tbody tr").first).to_be_visible()


def rows(page):
    return page.locator("#tasks tbody tr")


def row(page, task_id):
    return page.locator(f'#tasks tbody tr[data-id="{task_id}"]')


def act(page, button):
    """Clicks an action's button until its confirmation dialog is open (a click may land
    while the panel is being drawn again)."""
    for _ in range(5):
        page.click(button)
        try:
            expect(page.locator("#confirm")).to_be_visible(timeout=2_000)
            return
        except AssertionError:
            continue
    raise AssertionError(f"{button} opened no dialog")


def filter_by(page, status="", tool="", owner=""):
    page.select_option("#filter-status", status)
    page.fill("#filter-tool", tool)
    page.fill("#filter-owner", owner)
    page.click("#apply")
    settled(page)


def settled(page):
    """Waits until the page shows the last list it asked for."""
    body = page.locator("body")
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        requested = body.get_attribute("data-requested")
        if requested and body.get_attribute("data-rendered") == requested:
            return
        time.sleep(0.05)
    raise TimeoutError("the page did not show the list it asked for")


def main():
    started = time.monotonic()
    alice, bob, markup = Mcp(ALICE), Mcp(BOB), Mcp(MARKUP)

    check("the API answers 401 without a token", api_status("/api/tasks", "") == 401)
    check("the API answers 401 to an MCP principal's token",
          api_status("/api/tasks", ALICE) == 401)
    check("the API answers 200 to the admin token", api_status("/api/tasks", ADMIN_TOKEN) == 200)

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda err: errors.append(str(err)))
        page.on("dialog", lambda dialog: (errors.append("alert: " + dialog.message),
                                          dialog.dismiss()))
        page.goto(ADMIN_URL + "/")

        def refused():
            page.fill("#token", ALICE)
            page.click("#sign-in")
            expect(page.locator("#login-error")).to_contain_text("refused")
            expect(page.locator("#app")).to_be_hidden()
        step("the page refuses an MCP principal's token", refused)

        def signed_in():
            page.fill("#token", ADMIN_TOKEN)
            page.keyboard.press("Enter")
            expect(page.locator("#app")).to_be_visible()
            expect(page.locator("#live")).to_have_text("live")
        step("the page signs in with the admin token (keyboard) and goes live", signed_in)
        page.evaluate("window.__notReloaded = true")
        settled(page)

        created_at = time.monotonic()
        live_id = alice.sleep_task(8000)

        def appears_by_push():
            # The page reads its first page again only every 60 s unless the event stream
            # tells of a new task: appearing within 2 s is the push.
            expect(row(page, live_id).locator("td.status")).to_have_text("working", timeout=2_000)
            print(f"     the new task appeared {time.monotonic() - created_at:.2f} s after "
                  "its creation")
        step("a task created over MCP is pushed to the page (appears within 2 s, working)",
             appears_by_push)

        def completes():
            expect(row(page, live_id).locator("td.status")).to_have_text("completed",
                                                                          timeout=15_000)
        step("... then turns completed live", completes)
        check("... without a reload", page.evaluate("window.__notReloaded === true"))
        step("the counts say one completed", lambda: expect(
            page.locator('#by-status div[data-name="completed"] dd')).to_have_text("1"))
        step("the counts tell the tool", lambda: expect(
            page.locator('#by-tool div[data-name="sleep"] dd')).to_have_text("1"))

        markup_id = markup.sleep_task(1)

        def owner_as_text():
            cell = row(page, markup_id).locator("td").nth(1)
            expect(cell).to_have_text("<script>x</script>", timeout=10_000)
            assert page.locator("#tasks script").count() == 0, "a script element in the table"
        step("an owner named <script>x</script> renders as text", owner_as_text)

        t0 = time.monotonic()
        for _ in range(BULK):
            bob.sleep_task(1)
        print(f"     {BULK} tasks created over MCP in {time.monotonic() - t0:.1f} s")
        for path in ("/api/tasks?limit=50", "/api/tasks?limit=1000", "/api/counts"):
            timings = []
            for _ in range(3):
                t0 = time.monotonic()
                api_status(path, ADMIN_TOKEN)
                timings.append(time.monotonic() - t0)
            print(f"     GET {path}: median {sorted(timings)[1] * 1000:.0f} ms of 3")

        def filters():
            filter_by(page, owner="alice")
            expect(rows(page)).to_have_count(1)
            expect(row(page, live_id)).to_be_visible()
            filter_by(page, owner="bob", status="completed")
            expect(page.locator("#page-label")).to_contain_text("50 tasks")
            owners = rows(page).locator("td:nth-child(2)").all_text_contents()
            statuses = rows(page).locator("td.status").all_text_contents()
            assert set(owners) == {"bob"} and set(statuses) == {"completed"}, (owners, statuses)
            filter_by(page, tool="no-such-tool")
            expect(rows(page)).to_have_count(0)
        step("filters by owner, status and tool", filters)

        def paging():
            filter_by(page)
            seen, pages = set(), 0
            while True:
                pages += 1
                expect(page.locator("#page-label")).to_contain_text(f"page {pages} ")
                ids = rows(page).evaluate_all("rs => rs.map(r => r.dataset.id)")
                seen.update(ids)
                if page.locator("#next").is_disabled():
                    break
                page.click("#next")
                settled(page)
            assert len(seen) == BULK + 2, f"{len(seen)} distinct tasks over {pages} pages"
            page.click("#prev")
            expect(page.locator("#page-label")).to_contain_text(f"page {pages - 1} ")
            print(f"     {len(seen)} tasks over {pages} pages")
        step(f"pages through {BULK + 2} tasks with next and previous", paging)

        long_id = alice.sleep_task(600_000)
        doomed_id = alice.sleep_task(600_000)

        def cancel_in_dialog():
            filter_by(page, owner="alice", status="working")
            row(page, long_id).locator("button").click()
            expect(page.locator("#detail-fields")).to_contain_text(long_id)
            act(page, "#act-cancel")
            expect(page.locator("#confirm-text")).to_contain_text(long_id)
            page.click("#confirm-yes")
            expect(page.locator("#act-result")).to_contain_text("cancelled")
            expect(row(page, long_id).locator("td.status")).to_have_text("cancelled")
            assert alice.status(long_id) == "cancelled", alice.status(long_id)
        step("cancels through the confirmation dialog; the store says cancelled",
             cancel_in_dialog)

        reason = '<img src=x onerror="alert(1)">'

        def fail_in_dialog():
            row(page, doomed_id).locator("button").click()
            expect(page.locator("#detail-fields")).to_contain_text(doomed_id)
            act(page, "#act-fail")
            page.fill("#reason", reason)
            page.click("#confirm-yes")
            expect(page.locator("#act-result")).to_contain_text("failed")
            message = row(page, doomed_id).locator("td.message")
            expect(message).to_contain_text(reason)
            assert page.locator("#tasks img, #detail img").count() == 0, "an img element"
            assert alice.status(doomed_id) == "failed"
        step("fails with a markup reason through the dialog; it renders as text",
             fail_in_dialog)

        def refused_twice():
            filter_by(page, owner="alice")
            row(page, long_id).locator("button").click()
            expect(page.locator("#detail-fields")).to_contain_text(long_id)
            expect(page.locator("#act-cancel")).to_be_disabled()
        step("a finished task's actions are disabled", refused_twice)

        drain_id = alice.sleep_task(600_000)

        def instance_row():
            return page.locator("#instances tbody tr").first

        def drain_in_dialog():
            # The server's one instance holds the new task (sleep is redeliverable).
            refresh_instances(page)
            expect(instance_row().locator("td").nth(4)).to_have_text("claiming")
            name = instance_row().get_attribute("data-name")
            assert api_json(f"/api/tasks/{drain_id}")["leaseHolder"] == name
            # Going back changes nothing.
            instance_row().locator("button").click()
            expect(page.locator("#confirm")).to_be_visible()
            expect(page.locator("#confirm-text")).to_contain_text(name)
            page.click("#confirm-no")
            expect(page.locator("#confirm")).to_be_hidden()
            assert not any(i["draining"] for i in api_json("/api/instances")["instances"])
            instance_row().locator("button").click()
            page.click("#confirm-yes")
            expect(page.locator("#instance-result")).to_contain_text("Drained " + name)
            expect(page.locator("#instance-result")).to_contain_text("tasks handed over")
            expect(instance_row().locator("td").nth(4)).to_have_text("draining")
            # Handed over, and not claimed back: the only instance is drained.
            time.sleep(3)
            task = api_json(f"/api/tasks/{drain_id}")
            assert task["attempt"] == 1 and task["status"] == "working", task
        step("drains the instance through the dialog; it claims nothing back", drain_in_dialog)

        def undrain_in_dialog():
            instance_row().locator("button").click()
            expect(page.locator("#confirm-title")).to_contain_text("Undrain")
            page.click("#confirm-yes")
            expect(page.locator("#instance-result")).to_contain_text("Undrained")
            expect(instance_row().locator("td").nth(4)).to_have_text("claiming")
            deadline = time.monotonic() + 20
            while api_json(f"/api/tasks/{drain_id}")["attempt"] != 2:
                assert time.monotonic() < deadline, "not claimed again once undrained"
                time.sleep(0.2)
        step("undrains it through the dialog; it claims the task again (attempt 2)",
             undrain_in_dialog)

        filter_by(page)
        if row(page, live_id).count():
            row(page, live_id).locator("button").click()
            expect(page.locator("#detail-fields")).to_contain_text(live_id)
        if SHOTS:
            os.makedirs(SHOTS, exist_ok=True)
            # Tall enough for the panels and the top of the table.
            page.set_viewport_size({"width": 1280, "height": 1500})
            page.evaluate("window.scrollTo(0, 0)")
            page.screenshot(path=os.path.join(SHOTS, "admin-console-desktop.png"))
            page.set_viewport_size({"width": 1280, "height": 900})
        def purge_in_dialog():
            before = api_json("/api/counts")["byStatus"]
            finished = sum(before.get(s, 0) for s in ("completed", "failed", "cancelled"))
            assert finished >= BULK, before
            page.fill("#purge-age", "0")
            page.select_option("#purge-unit", "60000")
            page.click("#purge")
            expect(page.locator("#confirm-title")).to_contain_text("Purge")
            page.click("#confirm-no")
            assert api_json("/api/counts")["byStatus"].get("completed") == before["completed"]
            page.click("#purge")
            page.click("#confirm-yes")
            expect(page.locator("#purge-result")).to_contain_text(
                f"Purged {finished} of {finished} finished tasks", timeout=30_000)
            after = api_json("/api/counts")["byStatus"]
            assert not any(after.get(s) for s in ("completed", "failed", "cancelled")), after
            assert alice.status(drain_id) == "working"
            settled(page)
            statuses = set(rows(page).locator("td.status").all_text_contents())
            assert statuses == {"working"}, statuses
        step("purges every finished task through the dialog; working ones stay",
             purge_in_dialog)

        phone = browser.new_context(viewport={"width": 390, "height": 844},
                                    device_scale_factor=2, is_mobile=True, has_touch=True)
        mobile = phone.new_page()
        mobile.on("pageerror", lambda err: errors.append(str(err)))

        def on_a_phone():
            mobile.goto(ADMIN_URL + "/")
            mobile.fill("#token", ADMIN_TOKEN)
            mobile.click("#sign-in")
            expect(mobile.locator("#tasks tbody tr").first).to_be_visible()
            wide = mobile.evaluate("document.documentElement.scrollWidth")
            assert wide <= 391, f"the page is {wide} px wide"
            if SHOTS:
                mobile.screenshot(path=os.path.join(SHOTS, "admin-console-phone.png"))
        step("on a phone's viewport the page does not scroll sideways", on_a_phone)
        phone.close()

        check("no script error or alert on the page", not errors, str(errors[:3]))
        browser.close()
    print(f"     the whole test took {time.monotonic() - started:.1f} s")


try:
    main()
except Exception as err:  # noqa: BLE001 - the run counts as failed
    check("the test ran to its end", False, f"{type(err).__name__}: {err}")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)

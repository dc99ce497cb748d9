import assert from "node:assert/strict";
import { test } from "node:test";
import { type ProgressHost, type ProgressUpdate, ProgressNotification } from "../src/progressNotification";

/** A host with a manual clock: timers run only when the test advances it. */
function fakeHost() {
  const timers: Array<{ at: number; run: () => void; id: number }> = [];
  let now = 0;
  let nextId = 1;
  const shown: Array<{ title: string; cancellable: boolean; updates: ProgressUpdate[]; cancel?: () => void; settled: boolean }> = [];
  let cancels = 0;
  const host: ProgressHost = {
    show: (options, task) => {
      const entry = { ...options, updates: [] as ProgressUpdate[], cancel: undefined as (() => void) | undefined, settled: false };
      shown.push(entry);
      void task(
        (u) => entry.updates.push(u),
        (listener) => {
          entry.cancel = listener;
        },
      ).then(() => {
        entry.settled = true;
      });
    },
    cancel: () => {
      cancels += 1;
    },
    setTimer: (run, ms) => {
      const id = nextId++;
      timers.push({ at: now + ms, run, id });
      return id;
    },
    clearTimer: (id) => {
      const i = timers.findIndex((t) => t.id === id);
      if (i >= 0) {
        timers.splice(i, 1);
      }
    },
  };
  return {
    host,
    shown,
    cancels: () => cancels,
    advance(ms: number) {
      now += ms;
      for (const t of timers.filter((x) => x.at <= now)) {
        timers.splice(timers.indexOf(t), 1);
        t.run();
      }
    },
  };
}

const settle = () => new Promise((r) => setImmediate(r));

test("a job that ends before the delay never shows a notification", () => {
  const f = fakeHost();
  const p = new ProgressNotification(f.host, 400);
  p.handle({ kind: "begin", title: "Resource report for a.cu", cancellable: true });
  f.advance(399);
  p.handle({ kind: "end", message: "done" });
  f.advance(1000);
  assert.equal(f.shown.length, 0);
});

test("a long job shows a cancellable notification whose Cancel asks the server to cancel", async () => {
  const f = fakeHost();
  const p = new ProgressNotification(f.host, 400);
  p.handle({ kind: "begin", title: "Verify `saxpy`", cancellable: true, message: "queued" });
  p.handle({ kind: "report", message: "compile", percentage: 10 });
  f.advance(400);
  assert.equal(f.shown.length, 1);
  const n = f.shown[0]!;
  assert.equal(n.title, "warpwise: Verify `saxpy`");
  assert.equal(n.cancellable, true);
  assert.deepEqual(n.updates, [{ message: "compile", increment: 10 }]);
  p.handle({ kind: "report", message: "timing", percentage: 60 });
  assert.deepEqual(n.updates.at(-1), { message: "timing", increment: 50 });
  n.cancel?.();
  assert.equal(f.cancels(), 1);
  p.handle({ kind: "end", message: "cancelled: cancelled from the editor" });
  await settle();
  assert.equal(n.settled, true);
  assert.equal(p.done, true);
});

test("a job the server cannot cancel gets no Cancel button", () => {
  const f = fakeHost();
  const p = new ProgressNotification(f.host, 400);
  p.handle({ kind: "begin", title: "Profile", cancellable: false });
  f.advance(500);
  assert.equal(f.shown[0]?.cancellable, false);
  p.end();
});

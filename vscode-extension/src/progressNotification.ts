/**
 * One job's `$/progress` as a notification: shown only when the job is still running after a short delay (so quick
 * jobs never flash a notification), updated with the job's messages and percentage, with a Cancel button when the
 * server says the job can be cancelled. Pure (the editor comes in through `ProgressHost`) so it is unit-tested.
 */

export interface ProgressBegin {
  kind: "begin";
  title: string;
  message?: string;
  percentage?: number;
  cancellable?: boolean;
}

export interface ProgressReport {
  kind: "report";
  message?: string;
  percentage?: number;
  cancellable?: boolean;
}

export interface ProgressEnd {
  kind: "end";
  message?: string;
}

export type ProgressValue = ProgressBegin | ProgressReport | ProgressEnd;

export interface ProgressUpdate {
  message?: string;
  increment?: number;
}

export interface ProgressHost {
  /** Show a notification until `task` settles; `onCancel` registers what the Cancel button does. */
  show(
    options: { title: string; cancellable: boolean },
    task: (report: (update: ProgressUpdate) => void, onCancel: (listener: () => void) => void) => Promise<void>,
  ): void;
  /** Ask the server to cancel the job (`window/workDoneProgress/cancel`). */
  cancel(): void;
  setTimer(callback: () => void, ms: number): unknown;
  clearTimer(handle: unknown): void;
}

/** How long a job runs before its notification appears. */
export const NOTIFICATION_DELAY_MS = 400;

export class ProgressNotification {
  private begin: ProgressBegin | undefined;
  private latest: ProgressReport | undefined;
  private report: ((update: ProgressUpdate) => void) | undefined;
  private finish: (() => void) | undefined;
  private timer: unknown;
  private lastPercentage = 0;
  private ended = false;

  constructor(
    private readonly host: ProgressHost,
    private readonly delayMs = NOTIFICATION_DELAY_MS,
  ) {}

  /** True once the job has ended (or the notification was disposed). */
  get done(): boolean {
    return this.ended;
  }

  handle(value: ProgressValue): void {
    if (this.ended) {
      return;
    }
    switch (value.kind) {
      case "begin":
        this.begin = value;
        this.latest = { kind: "report", message: value.message, percentage: value.percentage };
        this.timer = this.host.setTimer(() => this.show(), this.delayMs);
        break;
      case "report":
        this.latest = { ...this.latest, ...value };
        if (this.report) {
          this.forward(value);
        }
        break;
      case "end":
        this.end();
        break;
    }
  }

  private forward(value: ProgressReport): void {
    const update: ProgressUpdate = {};
    if (value.message !== undefined) {
      update.message = value.message;
    }
    if (value.percentage !== undefined && value.percentage > this.lastPercentage) {
      update.increment = value.percentage - this.lastPercentage;
      this.lastPercentage = value.percentage;
    }
    this.report?.(update);
  }

  private show(): void {
    this.timer = undefined;
    if (this.ended || !this.begin) {
      return;
    }
    this.host.show({ title: `warpwise: ${this.begin.title}`, cancellable: this.begin.cancellable === true }, (report, onCancel) => {
      this.report = report;
      if (this.latest) {
        this.forward(this.latest);
      }
      onCancel(() => this.host.cancel());
      return new Promise<void>((resolve) => {
        this.finish = resolve;
        if (this.ended) {
          resolve();
        }
      });
    });
  }

  /** The job ended (or the client stops): close the notification, or never show it. */
  end(): void {
    this.ended = true;
    if (this.timer !== undefined) {
      this.host.clearTimer(this.timer);
      this.timer = undefined;
    }
    this.finish?.();
  }
}

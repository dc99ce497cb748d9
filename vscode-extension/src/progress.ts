/**
 * Progress of the server's long jobs (verification, profiling, optimization) as cancellable notifications.
 *
 * vscode-languageclient shows `$/progress` in the status bar only, without a cancel button. warpwise's jobs take
 * seconds to minutes and the user may want to stop one, so the extension answers `window/workDoneProgress/create`
 * itself: a job that is still running after a short delay gets a notification with its title, message and
 * percentage, and its Cancel button sends `window/workDoneProgress/cancel`. Jobs that end quickly never show.
 */
import * as vscode from "vscode";
import {
  type BaseLanguageClient,
  type ProgressToken,
  WorkDoneProgress,
  type WorkDoneProgressBegin,
  WorkDoneProgressCancelNotification,
  WorkDoneProgressCreateRequest,
  type WorkDoneProgressReport,
} from "vscode-languageclient/node";

/** How long a job runs before its notification appears. */
export const NOTIFICATION_DELAY_MS = 400;

class ProgressNotification {
  private readonly disposable: vscode.Disposable;
  private begin: WorkDoneProgressBegin | undefined;
  private latest: WorkDoneProgressReport | undefined;
  private reporter: vscode.Progress<{ message?: string; increment?: number }> | undefined;
  private finish: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private lastPercentage = 0;
  private ended = false;

  constructor(
    private readonly client: BaseLanguageClient,
    private readonly token: ProgressToken,
    private readonly onDone: (part: ProgressNotification) => void,
  ) {
    this.disposable = client.onProgress(WorkDoneProgress.type, token, (value) => {
      switch (value.kind) {
        case "begin":
          this.onBegin(value);
          break;
        case "report":
          this.onReport(value);
          break;
        case "end":
          this.done();
          break;
      }
    });
  }

  private onBegin(value: WorkDoneProgressBegin): void {
    this.begin = value;
    this.latest = { kind: "report", message: value.message, percentage: value.percentage };
    this.timer = setTimeout(() => this.show(), NOTIFICATION_DELAY_MS);
  }

  private onReport(value: WorkDoneProgressReport): void {
    this.latest = { ...this.latest, ...value };
    if (this.reporter) {
      this.report(value);
    }
  }

  private report(value: WorkDoneProgressReport): void {
    const update: { message?: string; increment?: number } = {};
    if (value.message !== undefined) {
      update.message = value.message;
    }
    if (value.percentage !== undefined && value.percentage > this.lastPercentage) {
      update.increment = value.percentage - this.lastPercentage;
      this.lastPercentage = value.percentage;
    }
    this.reporter?.report(update);
  }

  private show(): void {
    if (this.ended || !this.begin) {
      return;
    }
    const begin = this.begin;
    void vscode.window.withProgress(
      {
        location: vscode.ProgressLocation.Notification,
        title: `warpwise: ${begin.title}`,
        cancellable: begin.cancellable === true,
      },
      (progress, cancellation) => {
        this.reporter = progress;
        if (this.latest) {
          this.report(this.latest);
        }
        cancellation.onCancellationRequested(() => {
          void this.client.sendNotification(WorkDoneProgressCancelNotification.type, { token: this.token });
        });
        return new Promise<void>((resolve) => {
          this.finish = resolve;
          if (this.ended) {
            resolve();
          }
        });
      },
    );
  }

  done(): void {
    this.ended = true;
    if (this.timer) {
      clearTimeout(this.timer);
    }
    this.finish?.();
    this.disposable.dispose();
    this.onDone(this);
  }
}

/** Take over `window/workDoneProgress/create` for this client; call after the client has started. */
export function showProgressAsNotifications(client: BaseLanguageClient): vscode.Disposable {
  const active = new Set<ProgressNotification>();
  const handler = client.onRequest(WorkDoneProgressCreateRequest.type, (params) => {
    active.add(new ProgressNotification(client, params.token, (part) => active.delete(part)));
  });
  return new vscode.Disposable(() => {
    handler.dispose();
    for (const part of [...active]) {
      part.done();
    }
  });
}

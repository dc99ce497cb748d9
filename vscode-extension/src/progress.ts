/**
 * Progress of the server's long jobs (verification, profiling, optimization) as cancellable notifications.
 *
 * vscode-languageclient shows `$/progress` in the status bar only, without a cancel button. warpwise's jobs take
 * seconds to minutes and the user may want to stop one, so the extension answers `window/workDoneProgress/create`
 * itself and gives each token a `ProgressNotification`.
 */
import * as vscode from "vscode";
import {
  type BaseLanguageClient,
  WorkDoneProgress,
  WorkDoneProgressCancelNotification,
  WorkDoneProgressCreateRequest,
} from "vscode-languageclient/node";
import { ProgressNotification } from "./progressNotification";

/** Take over `window/workDoneProgress/create` for this client; call after the client has started. */
export function showProgressAsNotifications(client: BaseLanguageClient): vscode.Disposable {
  const active = new Set<{ part: ProgressNotification; subscription: vscode.Disposable }>();
  const handler = client.onRequest(WorkDoneProgressCreateRequest.type, ({ token }) => {
    const part = new ProgressNotification({
      show: (options, task) => {
        void vscode.window.withProgress(
          { location: vscode.ProgressLocation.Notification, title: options.title, cancellable: options.cancellable },
          (progress, cancellation) => task((update) => progress.report(update), (listener) => cancellation.onCancellationRequested(listener)),
        );
      },
      cancel: () => void client.sendNotification(WorkDoneProgressCancelNotification.type, { token }),
      setTimer: (callback, ms) => setTimeout(callback, ms),
      clearTimer: (handle) => clearTimeout(handle as NodeJS.Timeout),
    });
    const entry = {
      part,
      subscription: client.onProgress(WorkDoneProgress.type, token, (value) => {
        part.handle(value);
        if (part.done) {
          entry.subscription.dispose();
          active.delete(entry);
        }
      }),
    };
    active.add(entry);
  });
  return new vscode.Disposable(() => {
    handler.dispose();
    for (const entry of [...active]) {
      entry.part.end();
      entry.subscription.dispose();
    }
    active.clear();
  });
}

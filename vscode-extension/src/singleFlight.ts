/**
 * Re-entry guard for operations such as restarting the server: while one run is in flight, further calls join it
 * instead of starting a second, so pressing "Restart" three times restarts once.
 */
export class SingleFlight<T> {
  private current: Promise<T> | undefined;

  /** True while a run is in flight. */
  get busy(): boolean {
    return this.current !== undefined;
  }

  /** Start `operation` unless a run is in flight; either way, return the promise of the run in flight. */
  run(operation: () => Promise<T>): Promise<T> {
    if (this.current) {
      return this.current;
    }
    // The operation starts on the next microtask, so the promise is recorded before any of it runs.
    const started: Promise<T> = Promise.resolve()
      .then(operation)
      .finally(() => {
        if (this.current === started) {
          this.current = undefined;
        }
      });
    this.current = started;
    return started;
  }
}

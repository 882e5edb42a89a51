/** What a page leaves running (streams, timers), ended when another page is shown. */
export interface Page {
  close(): void;
}

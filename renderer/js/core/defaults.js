// Tunables of the desktop in one place, each with the reason for its value.
// Nothing else in the renderer hard-codes a timing or a limit.
export const DEFAULTS = Object.freeze({
  /** Snapshot debounce: long enough to coalesce a drag, short enough for the system app. */
  snapshotDebounceMs: 200,
  /** WebSocket reconnect backoff: first retry, factor, cap. */
  reconnectMinMs: 500,
  reconnectMaxMs: 10000,
  reconnectFactor: 2,
  /** /api/health is polled until "ready" (then the welcome line is spoken). */
  healthPollMs: 1000,
  /** Once ready, how often health is read again (a failing store is shown). */
  healthWatchMs: 10000,
  /** App-file grants (signed URLs) are renewed at half their lifetime, at least this often on failure. */
  fileGrantRetryMs: 5000,
  /** Request timeouts: an instruction may run several apps, each with a steps loop. */
  requestTimeoutMs: 30000,
  longRequestTimeoutMs: 180000,
  /** Toasts stay this long; errors a little longer so they can be read. */
  toastMs: 5000,
  toastErrorMs: 9000,
  maxToasts: 5,
  /** The notification list keeps this many entries. */
  maxNotifications: 100,
  /** Spoken replies: spec §10.2 rate 0.9 unless config.voice_rate says otherwise. */
  voiceRate: 0.9,
  /** New windows: size, and the cascade step between them. */
  windowWidth: 680,
  windowHeight: 480,
  windowMinWidth: 260,
  windowMinHeight: 160,
  cascadeStep: 28,
  /** The layout is saved this long after a move, resize, raise, minimise or close ends
   * (DESIGN §13): a burst of changes (a restore, a cascade of raises) is one request. */
  layoutSaveDebounceMs: 300,
  /** The window the user brought to the front is reported this long after the raises settle
   * (DESIGN §13 focus): a restored layout's cascade of raises is one report, of the top one. */
  focusReportDebounceMs: 150,
  /** ui_op change_text limit (DESIGN §10). */
  uiTextMax: 200,
  /** JSON tree: deeper or longer structures are cut with a "… n more" line. */
  jsonMaxDepth: 8,
  jsonMaxEntries: 200,
  /** Tables draw this many rows with the window and the rest right after its first paint. */
  tableFirstRows: 100,
  /** Dashboards may nest, but not without end. */
  dashboardMaxDepth: 3,
  /** Audit window default page size. */
  auditLimit: 200,
  /** Toast for a combined instruction message is capped so it stays readable. */
  messageMaxChars: 600,
  /** A run's progress line (elapsed time) and an approval card's countdown tick this often. */
  runTickMs: 1000,
  /** The tail of a running command's output shows at most this many lines. */
  runTailLines: 6,
  /** The memory window lists this many memories per state, "Show more" another as many. */
  memoryPage: 200,
  /** Sessions whose titles name the conversations memories came from (older ones show an id). */
  memorySessionTitles: 200,
  /** The memory window's search waits for a pause in typing this long. */
  memorySearchDelayMs: 250,
  /** Memory events come in bursts (an accept rewrites MEMORY.md and says so): one read after. */
  memoryReloadDelayMs: 150,
  /** The Markdown preview of a self file follows the typing after this pause. */
  selfPreviewDelayMs: 150,
});

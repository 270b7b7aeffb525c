// Runs `fn` in a task of its own once the browser has painted what is pending: from the next
// animation frame, or after `fallbackMs` where no frame comes (a tab opened in the background).
// Returns a function that cancels it.
export function afterPaint(fn, fallbackMs = 100) {
  let task = 0;
  const run = () => {
    cancelAnimationFrame(frame);
    clearTimeout(fallback);
    task = setTimeout(fn);
  };
  const frame = requestAnimationFrame(run);
  const fallback = setTimeout(run, fallbackMs);
  return () => {
    cancelAnimationFrame(frame);
    clearTimeout(fallback);
    clearTimeout(task);
  };
}

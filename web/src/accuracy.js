// Statistics ABOUT memfit (how close its estimates came to published GPU measurements), bundled
// at build time from docs/data/accuracy_summary.json. They are shown as text next to the
// estimate; the page never applies them to the core's numbers.
export { count, median_abs_error as medianAbsError } from '../../docs/data/accuracy_summary.json';

export const ACCURACY_PAGE = 'accuracy.html';

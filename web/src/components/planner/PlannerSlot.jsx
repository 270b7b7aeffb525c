// Where the planner appears (under the answer) while it is open. The planner is a chunk of its own
// (with its worker and wasm), loaded when it first opens; opened by its button (not by a link), it
// takes the focus. Field: the form's field component (the planner draws three of the form's fields);
// handed down rather than imported, so that the planner's chunk shares no module with the first
// view alone (esbuild would move such a module out of main.js into a chunk of its own).
import { useEffect, useState } from 'preact/hooks';

let loadPlanner = null;
let focusPlanner = false;

// Opens or closes the planner (state.planner: view.js).
export function togglePlanner(state) {
  const open = state.planner.value.open ? 0 : 1;
  focusPlanner = open === 1;
  state.planner.value = { ...state.planner.value, open };
}

export function PlannerSlot({ state, Field }) {
  const open = Boolean(state.planner.value.open);
  const [Planner, setPlanner] = useState(null);
  const [failure, setFailure] = useState('');
  useEffect(() => {
    if (!open || Planner) return;
    loadPlanner ??= import('./Planner.jsx');
    loadPlanner.then((m) => setPlanner(() => m.Planner), (error) => {
      loadPlanner = null;
      setFailure(String(error?.message ?? error));
    });
  }, [open]);
  if (!open) return null;
  if (!Planner) {
    return (
      <section class="card planner" id="planner" aria-busy={!failure} data-testid="planner-loading">
        {failure ? `The planner could not load (${failure}). Reload the page to try again.` : 'Loading the planner…'}
      </section>
    );
  }
  const autoFocus = focusPlanner;
  focusPlanner = false;
  return <Planner state={state} Field={Field} autoFocus={autoFocus} />;
}

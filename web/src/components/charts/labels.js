// Where a chart's text labels go so that none covers another or the plotted line: each label
// lists the places it may take, best first, and the labels take together the places that cover
// nothing (or the least bad ones). Text boxes are estimated from the characters (SVG text is not
// measured before it is drawn). Pure: no DOM.

const CHAR_WIDTH = 0.6;  // of the font size, for the chart's sans-serif digits and letters
const BOLD_WIDTH = 0.64;

const PAD = 2;  // px kept clear around a label

// The box of `text` drawn at (x, y) (y the baseline) with SVG's text-anchor `anchor`, its
// descenders and a little room included.
export function textBox(text, x, y, anchor, fontSize, bold = false) {
  const w = String(text).length * fontSize * (bold ? BOLD_WIDTH : CHAR_WIDTH);
  const left = anchor === 'end' ? x - w : anchor === 'middle' ? x - w / 2 : x;
  return { left: left - PAD, right: left + w + PAD, top: y - fontSize - PAD, bottom: y + fontSize * 0.3 + PAD };
}

const overlaps = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;

// Whether the polyline `points` ([[x, y], ...]) passes through `box` (sampled every 2 px).
function crossesLine(box, points) {
  for (let i = 1; i < points.length; i += 1) {
    const [x0, y0] = points[i - 1];
    const [x1, y1] = points[i];
    const steps = Math.max(1, Math.ceil(Math.hypot(x1 - x0, y1 - y0) / 2));
    for (let s = 0; s <= steps; s += 1) {
      const x = x0 + ((x1 - x0) * s) / steps;
      const y = y0 + ((y1 - y0) * s) / steps;
      if (x >= box.left && x <= box.right && y >= box.top && y <= box.bottom) return true;
    }
  }
  return false;
}

// Whether a plotted point (a circle of radius r at x, y) shows inside `box`.
const coversPoint = (box, [x, y, r = 4]) => x + r > box.left && x - r < box.right && y + r > box.top && y - r < box.bottom;

// labels: [{ id, text, bold, places: [{ x, y, anchor }] }]; bounds: { left, right, top, bottom };
// line: the plotted points; rules: [{ id, y }], the horizontal lines labels belong to (crossing
// another label's rule costs a little); points: the plotted markers [[x, y, r]], which text hides
// worse than it hides the line between them. Returns { [id]: { x, y, anchor } }. Every combination
// of places is tried (a chart has a handful of labels with fourteen places at most) and the least
// bad kept: covering another label costs most, then leaving the plot, then covering markers, then
// crossing the line (the text's halo keeps it readable), then another rule; among equals, each
// label's earlier places.
export function placeLabels(labels, { bounds, line = [], rules = [], points = [], fontSize = 11.5 }) {
  const options = labels.map((label) => label.places.map((place, rank) => {
    const box = textBox(label.text, place.x, place.y, place.anchor, fontSize, label.bold);
    const outside = box.left < bounds.left || box.right > bounds.right || box.top < bounds.top || box.bottom > bounds.bottom;
    const ruled = rules.filter((r) => r.id !== label.id && r.y > box.top && r.y < box.bottom).length;
    const marked = points.filter((pt) => coversPoint(box, pt)).length;
    // Markers: 2 for the first, 1 more for any others, so that covering several stays cheaper than
    // leaving the plot.
    const markers = marked > 0 ? Math.min(3, 1 + marked) : 0;
    return { place, box, cost: (crossesLine(box, line) ? 1 : 0) + (outside ? 4 : 0) + markers + ruled * 0.5 + rank * 0.01 };
  }));
  let best = null;
  let bestCost = Infinity;
  const chosen = [];
  const search = (i, cost) => {
    if (cost >= bestCost) return;
    if (i === options.length) {
      bestCost = cost;
      best = [...chosen];
      return;
    }
    for (const option of options[i]) {
      const covered = chosen.reduce((n, other) => n + (overlaps(option.box, other.box) ? 16 : 0), 0);
      chosen.push(option);
      search(i + 1, cost + option.cost + covered);
      chosen.pop();
    }
  };
  search(0, 0);
  const out = {};
  labels.forEach((label, i) => { out[label.id] = (best?.[i] ?? options[i][0]).place; });
  return out;
}

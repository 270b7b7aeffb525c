// A stylesheet that comes with a chunk (the details', the Embed dialog's, the planner's), added to
// the page once, after the page's own (styles.css): the first view does not carry it.
export function addStyles(id, css) {
  if (document.getElementById(id)) return;
  const style = document.createElement('style');
  style.id = id;
  style.textContent = css;
  document.head.append(style);
}

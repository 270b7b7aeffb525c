# Sphinx: memfit's web component as a module script on every page.
project = "Training notes"
html_js_files = [("https://memfit.example/memfit-estimate.js", {"type": "module"})]

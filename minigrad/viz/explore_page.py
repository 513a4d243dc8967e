"""The page `explore` writes: one HTML file with its CSS and JavaScript inline (no framework, no
build step, nothing fetched). This file holds the markup and the style; `explore_script.py` the
script, which lays the graph out, draws it as SVG and steps through backward.

The data comes in as one JSON blob (see `explore.py` for its fields) in place of __DATA__.
"""

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>__TITLE__</title>
<style>
  body { font: 13px Helvetica, Arial, sans-serif; margin: 0; color: #222; }
  header { padding: 6px 12px; background: #f3f3f3; border-bottom: 1px solid #ccc; }
  header button { font-size: 13px; margin-right: 4px; }
  #where { margin-left: 10px; font-weight: bold; }
  #level { margin-left: 10px; }
  main { display: flex; height: calc(100vh - 40px); }
  #graph { flex: 1; overflow: auto; }
  #graph svg { display: block; margin: 0 auto; }
  aside { width: 380px; overflow: auto; border-left: 1px solid #ccc; padding: 8px 12px; }
  aside h3 { margin: 10px 0 4px; font-size: 13px; }
  .values { font: 11px monospace; white-space: pre; background: #f8f8f8; padding: 3px 5px;
            margin: 2px 0 6px; display: inline-block; max-width: 100%; overflow-x: auto; }
  .note { color: #666; }
  .node text { font: 11px monospace; pointer-events: none; }
  .node { cursor: pointer; }
  .node rect { stroke: #555; stroke-width: 1; }
  .node.module rect { stroke-width: 2; stroke-dasharray: 5 2; }
  .node.current rect { stroke: #d00; stroke-width: 3; }
  .node.upstream rect { stroke: #e69500; stroke-width: 3; }
  .node.receiving rect { stroke: #1a7f37; stroke-width: 3; }
  .node.selected rect { stroke: #06c; stroke-width: 3; }
  .edge { fill: none; stroke: #888; stroke-width: 1.2; }
  .edge.sending { stroke: #1a7f37; stroke-width: 2.5; }
  .edge.incoming { stroke: #e69500; stroke-width: 2.5; }
  #modules ul { list-style: none; padding-left: 14px; margin: 2px 0; }
  #modules span { cursor: pointer; }
  li.sent { margin-bottom: 6px; }
</style>
</head>
<body>
<header>
  <button id="reset" title="before backward">&#8676; start</button>
  <button id="prev" title="previous step (left arrow)">&#9664; previous</button>
  <button id="next" title="next step (right arrow)">next &#9654;</button>
  <button id="play">play</button>
  <button id="in" title="follow the steps of this module (down arrow)">step in &#9660;</button>
  <button id="out" title="back to the module as one step (up arrow)">step out &#9650;</button>
  <span id="where"></span>
  <span id="level" class="note"></span>
</header>
<main>
  <div id="graph"></div>
  <aside>
    <div id="step-panel"></div>
    <div id="node-panel"></div>
    <h3>Modules (click to open or fold)</h3>
    <div id="modules"></div>
  </aside>
</main>
<script type="application/json" id="minigrad-data">__DATA__</script>
<script>
__SCRIPT__</script>
</body>
</html>
"""

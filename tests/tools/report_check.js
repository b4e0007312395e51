// Appended to a copy of report.html by test_report_browser: what the
// browser drew, as JSON in a pre element of id skein-check (read with --dump-dom).
// Each chart (an <svg>): its title, each line's points and length, and its
// pixels of colour (not grey) when the browser draws it into a canvas, with
// its lines and without them: the difference is the lines' own.
(function () {
  var out = {errors: [], charts: []};
  window.addEventListener('error', function (e) { out.errors.push(String(e.message)); });
  var svgs = Array.prototype.slice.call(document.querySelectorAll('svg'));
  var pending = 2 * svgs.length;
  function finish() {
    if (--pending > 0) return;
    var pre = document.createElement('pre');
    pre.id = 'skein-check';
    pre.textContent = JSON.stringify(out);
    document.body.appendChild(pre);
  }
  function coloured(svg, into, key) {
    var img = new Image();
    img.onload = function () {
      var c = document.createElement('canvas');
      c.width = svg.width.baseVal.value;
      c.height = svg.height.baseVal.value;
      var g = c.getContext('2d');
      g.drawImage(img, 0, 0);
      var d = g.getImageData(0, 0, c.width, c.height).data, n = 0;
      for (var k = 0; k < d.length; k += 4)
        if (d[k + 3] > 0 && (d[k] != d[k + 1] || d[k + 1] != d[k + 2])) n++;
      into[key] = n;
      finish();
    };
    img.onerror = function () { out.errors.push('a chart does not render as an image'); finish(); };
    img.src = 'data:image/svg+xml;charset=utf-8,' + encodeURIComponent(new XMLSerializer().serializeToString(svg));
  }
  svgs.forEach(function (svg) {
    var chart = {title: svg.querySelector('text') ? svg.querySelector('text').textContent : '', lines: []};
    svg.querySelectorAll('polyline').forEach(function (p) {
      chart.lines.push({points: p.points.numberOfItems, length: p.getTotalLength()});
    });
    out.charts.push(chart);
    var bare = svg.cloneNode(true);
    bare.querySelectorAll('polyline').forEach(function (p) { p.remove(); });
    coloured(svg, chart, 'coloured');
    coloured(bare, chart, 'coloured_without_lines');
  });
  if (svgs.length == 0) { pending = 1; finish(); }
})();

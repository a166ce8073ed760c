// A mixed JavaScript workload for Rhino (bench/jvm_workload.sh, WORKLOAD=rhino):
// recursion, objects and closures, strings and regular expressions, sorting,
// JSON. Prints one checksum line so a run that computed something else shows.
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

function Point(x, y) { this.x = x; this.y = y; }
Point.prototype.add = function (o) { return new Point(this.x + o.x, this.y + o.y); };
Point.prototype.norm1 = function () { return Math.abs(this.x) + Math.abs(this.y); };

function objects(n) {
  var p = new Point(0, 0), s = 0;
  for (var i = 0; i < n; i++) {
    p = p.add(new Point(i % 7 - 3, i % 5 - 2));
    s += p.norm1();
  }
  return s;
}

function strings(n) {
  var words = [], total = 0;
  for (var i = 0; i < n; i++) words.push("w" + (i * 7919 % 1000) + "_" + (i % 13));
  var text = words.join(" ");
  var m = text.match(/w(\d+)_1\b/g);
  total += m ? m.length : 0;
  total += text.replace(/_(\d+)/g, function (all, d) { return d.length > 1 ? "!" : "?"; }).length;
  return total;
}

function sorting(n) {
  var a = [];
  for (var i = 0; i < n; i++) a.push({ k: (i * 2654435761) % 100003, v: i });
  a.sort(function (p, q) { return p.k - q.k || p.v - q.v; });
  var s = 0;
  for (var j = 0; j < a.length; j += 97) s += a[j].k;
  return s;
}

function closures(n) {
  var fs = [];
  for (var i = 0; i < 64; i++) (function (k) { fs.push(function (x) { return (x * k + 1) % 1009; }); })(i);
  var x = 1;
  for (var r = 0; r < n; r++) x = fs[r & 63](x);
  return x;
}

function json(n) {
  var o = { list: [] };
  for (var i = 0; i < n; i++) o.list.push({ id: i, name: "item" + i, tags: ["a", "b", i % 3 ? "c" : "d"] });
  var back = JSON.parse(JSON.stringify(o));
  return back.list.length + back.list[n - 1].name.length;
}

var rounds = arguments.length > 0 ? parseInt(arguments[0], 10) : 4;
var sum = 0;
for (var r = 0; r < rounds; r++) {
  sum += fib(22) + objects(100000) + strings(20000) + sorting(20000) + closures(200000) + json(5000);
}
print("checksum " + sum);

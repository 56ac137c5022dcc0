// statsd_totals.js: a statsd backend that keeps the running total of every counter across
// flushes (statsd resets counters at each flush) and rewrites config.totalsFile as JSON after
// each flush, so a benchmark can count exactly how many StatsD lines statsd absorbed.
var fs = require('fs');

exports.init = function (startupTime, config, events) {
  var totals = {};
  var file = config.totalsFile;
  events.on('flush', function (ts, metrics) {
    for (var k in metrics.counters) {
      totals[k] = (totals[k] || 0) + metrics.counters[k];
    }
    var tmp = file + '.tmp';
    fs.writeFileSync(tmp, JSON.stringify(totals));
    fs.renameSync(tmp, file);
  });
  return true;
};

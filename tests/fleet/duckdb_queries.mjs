// Runs SQL queries with DuckDB (an independent Parquet reader) over a
// lookback Parquet dataset and prints their rows, for tests/fleet and
// tests/parquet to compare with what they expect.
//
//   node duckdb_queries.mjs DATASET_DIR QUERIES.json
//
// QUERIES.json: [{"tag": "...", "sql": "..."}]. Every table directory found
// under DATASET_DIR becomes a view of the same name (Hive partitioning on).
// Output: per query "## TAG" then one line per row, values tab-separated,
// NULL as "NULL", with \ \t \n escaped. A query that fails prints
// "## TAG" then "!ERROR message".
import { DuckDBInstance } from '@duckdb/node-api';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';

const [dataset, queriesFile] = process.argv.slice(2);
const queries = JSON.parse(readFileSync(queriesFile, 'utf8'));
const db = await DuckDBInstance.create(':memory:');
const c = await db.connect();
if (dataset && existsSync(dataset)) {
  for (const table of readdirSync(dataset)) {
    if (!statSync(`${dataset}/${table}`).isDirectory()) continue;
    await c.run(`CREATE VIEW ${table} AS SELECT * FROM read_parquet('${dataset}/${table}/*/*/*.parquet', hive_partitioning = true)`);
  }
}
const esc = (v) => (v === null || v === undefined ? 'NULL' : String(v)).replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n');
let out = '';
for (const q of queries) {
  out += `## ${q.tag}\n`;
  try {
    const r = await c.runAndReadAll(q.sql);
    for (const row of r.getRowsJson()) out += row.map(esc).join('\t') + '\n';
  } catch (e) {
    out += `!ERROR ${String(e.message).replace(/\n/g, ' ')}\n`;
  }
}
process.stdout.write(out);

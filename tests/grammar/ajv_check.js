// Independent check of generated JSON documents: ajv (draft 2020-12) + ajv-formats.
// Usage: node ajv_check.js CASES.json, where CASES is [{"name", "schema", "docs": [text]}].
// Prints one line per failure and a summary "ajv: VALID/TOTAL valid"; exit status 1 on any failure.
"use strict";
const fs = require("fs");
const Ajv2020 = require("ajv/dist/2020");
const addFormats = require("ajv-formats");

const cases = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
let total = 0, valid = 0;
for (const c of cases) {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  const validate = ajv.compile(c.schema);
  for (const doc of c.docs) {
    ++total;
    let value;
    try {
      value = JSON.parse(doc);
    } catch (e) {
      console.log(`${c.name}: not JSON: ${JSON.stringify(doc)}`);
      continue;
    }
    if (validate(value)) {
      ++valid;
    } else {
      console.log(`${c.name}: invalid ${JSON.stringify(doc)}: ${ajv.errorsText(validate.errors)}`);
    }
  }
}
console.log(`ajv: ${valid}/${total} valid`);
process.exit(valid === total ? 0 : 1);

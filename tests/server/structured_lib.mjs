// Shared by the structured-output checks against `dsserve serve` (structured_output_sdk.mjs, in
// `make test`, and structured_output_acceptance.mjs, the slow acceptance run): the independent
// judge of JSON replies and the streamed / non-streamed pair of one request.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const Ajv2020 = require('ajv/dist/2020');
const addFormats = require('ajv-formats');

// A judge of reply texts for `schema` (ajv, draft 2020-12, with ajv-formats): null when the text
// is JSON that validates, else the reason.
export function validator(schema) {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  const validate = ajv.compile(schema);
  return (text) => {
    let value;
    try {
      value = JSON.parse(text);
    } catch (e) {
      return `not JSON: ${e.message}`;
    }
    return validate(value) ? null : ajv.errorsText(validate.errors);
  };
}

// One chat request, non-streamed and then streamed: {content, finish_reason} of each, and the
// non-streamed reply's completion tokens.
export async function chatBoth(client, req) {
  const full = await client.chat.completions.create(req);
  const stream = await client.chat.completions.create({ ...req, stream: true });
  let content = '', finish = null;
  for await (const chunk of stream) {
    for (const ch of chunk.choices) {
      if (ch.delta?.content) content += ch.delta.content;
      if (ch.finish_reason) finish = ch.finish_reason;
    }
  }
  const m = full.choices[0];
  return {
    full: { content: m.message.content ?? '', finish_reason: m.finish_reason },
    stream: { content, finish_reason: finish },
    tokens: full.usage?.completion_tokens ?? 0,
  };
}

// Computes the JavaScript answers that harness/model/src/js.rs must give.
// Run with Node 20: `node harness/model/tests/it/js_vectors.mjs > harness/model/tests/it/js_vectors.json`.
// The Rust test `js_vectors.rs` checks every function against the output.
// Dates are read in UTC, as the harness and CI run them.
process.env.TZ = 'UTC'

const numbers = [
  '0', '-0', '1', '-1', '0.1', '0.000001', '1e-7', '1.5e-7', '123456789012345680000', '1e21', '1.7976931348623157e308',
  '5e-324', '2.5', '100', '1e300', '-1e-7', '9007199254740991', '9007199254740992', '9007199254740993', '4294967295',
  '0.30000000000000004', '123.456', '1e20', '-1.5e21', 'NaN', 'Infinity', '-Infinity', '2e-6', '12345.6789e10',
];
const strings = [
  '', ' ', '  12  ', '0x1F', '0X1f', '0o17', '0b101', '0x', '1e3', '-1e3', '.5', '5.', '+5', '1_000', 'Infinity',
  '-Infinity', '+Infinity', 'infinity', 'NaN', 'nan', 'inf', '\u00a012\ufeff', '\u008512', '\u200b12', '12px', '1 2',
  '0.0', '-0', '00012', '1e', 'e5', '--1',
];
const values = [null, true, false, 0, -0.0, 1.5, 1e-7, 1e21, '', 'x', [], [1, null, 'a'], [[1, 2], [3]], {}, { a: 1 }];
const quoted = ['', 'plain', 'quote " and \\ backslash', '\b\f\n\r\t', '\u0000\u001f\u007f', '\u2028\u2029', 'é 😀', '</script>'];
const keyLists = [
  ['b', '10', 'a', '2', '01'], ['4294967295', '4294967294', '0'], ['x', '-1', '1.5', '3'], ['__proto__x', '9', ''],
];
const pairs = [
  ['\u{1F600}', '\uFFFF'], ['B', 'a'], ['a', 'a_b'], ['a_b', 'ab'], ['', 'a'], ['same', 'same'], ['\uE000', '\u{10000}'],
];
// The forms of date js.rs reads (an HTTP Retry-After may be one), and texts
// V8 refuses too.
const dates = [
  'Thu, 01 Jan 2026 00:00:02 GMT', 'Thursday, 01-Jan-26 00:00:02 GMT', 'Thu Jan  1 00:00:02 2026', 'Sun, 06 Nov 1994 08:49:37 GMT',
  'Sunday, 06-Nov-94 08:49:37 GMT', 'Sun Nov  6 08:49:37 1994', 'thu, 01 jan 2026 00:00:02 gmt', 'Mon, 01 Jan 2026 00:00:02 GMT',
  '01 Jan 2026 00:00:02 GMT', 'Thu, 1 Jan 2026 00:00:02 GMT', 'Thu, 01 Jan 2026 00:00:02 +0100', 'Thu, 01 Jan 2026 00:00:02 -0530',
  'Thu, 01 Jan 2026 00:00:02 UTC', 'Thu, 01 January 2026 00:00 GMT', 'Thu, 31 Feb 2026 00:00:00 GMT', ' Thu, 01 Jan 2026 00:00:02 GMT ',
  'Thu, 01 Jan 2026 24:00:00 GMT', 'Thu, 01 Jan 2026 25:00:00 GMT', 'Thu, 01 Jan 2026 00:60:00 GMT', 'Jan 2026', '2026',
  '2026-01-01T00:00:02Z', '2026-01-01T00:00:02.5Z', '2026-01-01T00:00:02.123456Z', '2026-01-01', '2026-01', '2026-01-01T00:00',
  '2026-01-01T00:00:02+01:00', '2026-01-01T24:00:00Z', '2026-01-01T24:00:01Z', '2026-02-30', '2026-13-01', '+002026-01-01T00:00:00Z',
  '-000001-01-01T00:00:00Z', '2026-01-01T00:00:02z', '', 'soon', 'Thu, 01 Xyz 2026 00:00:02 GMT',
  '2026-01-01t00:00:02Z', '2026-01-01T00:00+23:59', '2026-01-01T00:00+24:00', '2026-01-01T00:00:02.Z', '2026T10:20Z',
  'Thu, 01 Jan 2026 001:02:0003 GMT', 'Jan 01-Feb-26', '2026 Jan 02', '01 Jan 49', '01 Jan 50', 'Thu, 01 Jan 2026 00:00 +05300',
]
const slices = [['a\u{1F600}b', 0, 3], ['ab', 1, 99], ['a\u{1F600}b', 0, 2], ['héllo', 2, 1]];

const spaces = [];
for (let cp = 0; cp <= 0xffff; cp++) {
  if (cp >= 0xd800 && cp <= 0xdfff) continue;
  if (/\s/u.test(String.fromCodePoint(cp))) spaces.push(cp);
}
// What `.` with the `u` flag refuses: the line terminators.
const lineTerminators = [];
for (let cp = 0; cp <= 0xffff; cp++) {
  if (cp >= 0xd800 && cp <= 0xdfff) continue;
  if (!/^.$/u.test(String.fromCodePoint(cp))) lineTerminators.push(cp);
}

// The shape upstream iterates with (`for (const x of chunk.choices ?? [])`):
// V8 words the error after the expression, so the vectors use the same one.
const iterationErrors = [5, 1e-7, true, { a: 1 }].map((value) => {
  const holder = { value };
  try {
    for (const item of holder.value ?? []) void item;
    return null;
  } catch (error) {
    return error.message;
  }
});

const out = {
  number_to_string: numbers.map((n) => [n, String(Number(n))]),
  number_json: numbers.map((n) => [n, JSON.stringify(Number(n))]),
  is_safe_integer: numbers.map((n) => [n, Number.isSafeInteger(Number(n))]),
  string_to_number: strings.map((s) => [s, String(Number(s))]),
  to_js_string: values.map((v) => [v, String(v)]),
  truthy: values.map((v) => [v, Boolean(v)]),
  stringify: [...values, { b: [1.5, 1e-7, { c: '\n' }], a: null }, [0.000001, 1e21, -0]].map((v) => [v, JSON.stringify(v)]),
  quote: quoted.map((s) => [s, JSON.stringify(s)]),
  key_order: keyLists.map((keys) => {
    const object = {};
    for (const key of keys) object[key] = 1;
    return [keys, Object.keys(object)];
  }),
  cmp_utf16: pairs.map(([a, b]) => [a, b, a < b ? -1 : a > b ? 1 : 0]),
  slice_utf16: slices.map(([s, a, b]) => [s, a, b, s.slice(a, b).replace(/[\uD800-\uDFFF]/gu, '\uFFFD')]),
  js_space_code_points: spaces,
  line_terminator_code_points: lineTerminators,
  date_parse: dates.map((d) => [d, String(Date.parse(d))]),
  iterate_errors: [[5, iterationErrors[0]], [1e-7, iterationErrors[1]], [true, iterationErrors[2]], [{ a: 1 }, iterationErrors[3]]],
};
process.stdout.write(JSON.stringify(out, null, 1) + '\n');

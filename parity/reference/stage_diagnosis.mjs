import assert from 'node:assert/strict';
function evaluate(x){
if(!x.required.length)return {stage:'unresolved'};
if(typeof x.correct!=='boolean')return {error:'answer-label'};
const missing=[...new Set(x.required)].filter(id=>!x.context.includes(id)).sort();
return {stage:missing.length?'retrieval':x.correct?'pass':'generation',missing};
}
const cases = [
{
"id": "missing-context",
"input": {
"required": [
"D1"
],
"context": [
"X"
],
"correct": false
},
"expected": {
"stage": "retrieval",
"missing": [
"D1"
]
}
},
{
"id": "wrong-generation",
"input": {
"required": [
"D1"
],
"context": [
"D1"
],
"correct": false
},
"expected": {
"stage": "generation",
"missing": []
}
},
{
"id": "missing-answer-label",
"input": {
"required": [
"D1"
],
"context": [
"D1"
]
},
"expected": {
"error": "answer-label"
}
},
{
"id": "lucky-answer-gap",
"input": {
"required": [
"D1",
"D2"
],
"context": [
"D1"
],
"correct": true
},
"expected": {
"stage": "retrieval",
"missing": [
"D2"
]
}
}
];
for (const c of cases) assert.deepEqual(evaluate(c.input), c.expected, c.id);
console.log(JSON.stringify({checked:cases.length,caseIds:cases.map(c=>c.id)}));
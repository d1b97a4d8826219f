import assert from 'node:assert/strict';
function evaluate(x){
if(new Set(x.source).size!==x.source.length||new Set(x.answer).size!==x.answer.length)return {error:'duplicate-id'};
const membership=x.source.length===x.answer.length&&x.source.every(id=>x.answer.includes(id));
return {membership,order:membership&&x.source.every((id,i)=>x.answer[i]===id)};
}
const cases = [
{
"id": "unrequested-sort",
"input": {
"source": [
"C",
"A",
"B"
],
"answer": [
"A",
"B",
"C"
]
},
"expected": {
"membership": true,
"order": false
}
},
{
"id": "source-order-retained",
"input": {
"source": [
"C",
"A",
"B"
],
"answer": [
"C",
"A",
"B"
]
},
"expected": {
"membership": true,
"order": true
}
},
{
"id": "duplicate-answer",
"input": {
"source": [
"C",
"A",
"B"
],
"answer": [
"C",
"A",
"A",
"B"
]
},
"expected": {
"error": "duplicate-id"
}
}
];
for (const c of cases) assert.deepEqual(evaluate(c.input), c.expected, c.id);
console.log(JSON.stringify({checked:cases.length,caseIds:cases.map(c=>c.id)}));
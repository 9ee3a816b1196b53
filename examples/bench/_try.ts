import { profiles } from "./harness.js"
import * as InProcess from "./inProcess.js"
const r = await InProcess.run({ ...profiles.full, rounds: 3, taskTimeMs: 300 })
console.log(JSON.stringify(r, null, 1))

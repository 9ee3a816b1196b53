import { profiles } from "./harness.js"
import * as Http from "./zz-http.js"
const t0 = performance.now()
await Http.run(profiles.smoke)
console.log("http total", (performance.now() - t0).toFixed(0), "ms")

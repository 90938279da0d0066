// Node 20 lacks Promise.withResolvers (Node 22 has it); @workflow/world-testing's hooks case and
// the 5.x runtime call it. Loaded into the suite (setupFiles) and, through NODE_OPTIONS
// `--import`, into every app server the suite spawns.
if (typeof Promise.withResolvers !== "function") {
  Promise.withResolvers = function withResolvers() {
    let resolve;
    let reject;
    const promise = new Promise((res, rej) => {
      resolve = res;
      reject = rej;
    });
    return { promise, resolve, reject };
  };
}

// Package listing reads the marketplaces' own model listings — OpenRouter's
// model list and per-model endpoints, the Vercel AI Gateway's model list —
// and merges what they say into a catalog document (catalog.json), never
// clobbering what was written by hand.
//
// The stages are:
//
//   - [ParseOpenRouterModels], [ParseOpenRouterEndpoints] and
//     [ParseVercelModels] read a listing in the shape its API documents,
//     leniently (unknown members are ignored: the listings grow), and
//     refuse one that is not that shape with an [Error] located by a JSON
//     pointer into the file or URL;
//   - [OpenRouter] and [Vercel] gather a listing from saved files or over
//     HTTP ([Client]: bounded concurrency, retries with backoff on 429 and
//     5xx) into an [Import], the catalog models and names the listing
//     gives;
//   - [Merge] applies an Import to a catalog document and returns a
//     [Summary] of what changed: imported fields (context windows, prices,
//     cache prices, latency and throughput) follow the listing, hand-written
//     ones (classes, native ids, manual endpoints, pinned endpoints) stay.
//
// `sluice catalog import` runs these once; the gateway runs them on a timer
// when [catalog] source is set. Nothing here imports the gateway.
package listing

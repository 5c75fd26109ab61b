import { describeImageFetcherConformance } from "@pixport/testing";
import { blockedAddressReason, createNodeImageFetcher } from "../src/index.js";

// The production fetcher, pointed at the suite's loopback HTTPS server: its host names resolve to
// 127.0.0.1 and are exempt from the public-address rule; every other name and address is not.
describeImageFetcherConformance({
  name: "node (node:https)",
  create: (network) =>
    createNodeImageFetcher({
      resolve: async (hostname) => {
        if (network.hosts.includes(hostname)) return [{ address: "127.0.0.1", family: 4 }];
        const privateAddress = network.privateHosts.get(hostname);
        if (privateAddress !== undefined) return [{ address: privateAddress, family: 4 }];
        throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
      },
      ca: network.ca,
      port: network.port,
      addressPolicy: (address, { hostname }) =>
        network.hosts.includes(hostname) && address === "127.0.0.1" ? null : blockedAddressReason(address),
    }),
});

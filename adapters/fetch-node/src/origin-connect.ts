import type { LookupAddress } from "node:dns";
import { lookup as dnsLookup } from "node:dns";
import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { isIP } from "node:net";
import { ErrorCodes, ImagePipelineError } from "@pixport/core";
import { type OriginGetRequest, originError } from "@pixport/core/adapter-kit";

/** How an origin's requests are made: the address policy and the request's fixed head. */
export interface OriginConnectSettings {
  /** `null` to allow an address, else the reason it is refused. */
  policy: (address: string) => string | null;
  headers: Record<string, string>;
  userAgent: string;
  connectTimeoutMs: number;
  maxHeaderBytes: number;
  ca: string | string[] | undefined;
}

export const originTimeout = (what: string) =>
  new ImagePipelineError(ErrorCodes.ORIGIN_TIMEOUT, `The origin did not ${what} in time.`);

function refused(policy: OriginConnectSettings["policy"], address: string) {
  return originError(
    "The origin resolves to an address this server may not connect to.",
    new Error(`${address}: ${policy(address)}`),
  );
}

/** The name look-up of every connection: all answers checked, the first one used. */
function lookupFor(policy: OriginConnectSettings["policy"]) {
  return (
    hostname: string,
    _options: unknown,
    callback: (error: Error | null, address: string | LookupAddress[], family?: number) => void,
  ) => {
    dnsLookup(hostname, { all: true, verbatim: true }, (error, answers) => {
      if (error !== null) return callback(error, []);
      const bad = answers.find((answer) => policy(answer.address) !== null);
      if (bad !== undefined) return callback(refused(policy, bad.address), []);
      const first = answers[0];
      if (first === undefined) return callback(new Error(`${hostname} has no address`), []);
      callback(null, [first]);
    });
  };
}

/**
 * One GET of `url` (no redirect followed): every address checked through the look-up the
 * connection itself uses, and the peer actually connected checked again.
 */
export function sendOriginRequest(
  config: OriginConnectSettings,
  url: URL,
  request: OriginGetRequest,
): Promise<IncomingMessage> {
  const { policy } = config;
  const literal = url.hostname.replace(/^\[(.*)\]$/, "$1");
  if (isIP(literal) !== 0 && policy(literal) !== null) return Promise.reject(refused(policy, literal));
  const validators = request.validators ?? {};
  return new Promise((resolve, reject) => {
    const outgoing = (url.protocol === "https:" ? httpsRequest : httpRequest)(url, {
      method: "GET",
      headers: {
        ...config.headers,
        Accept: "image/*",
        "Accept-Encoding": "identity",
        "User-Agent": config.userAgent,
        ...(validators.etag === undefined ? {} : { "If-None-Match": validators.etag }),
        ...(validators.lastModified === undefined ? {} : { "If-Modified-Since": validators.lastModified }),
      },
      agent: false,
      lookup: lookupFor(policy) as never,
      maxHeaderSize: config.maxHeaderBytes,
      ...(config.ca === undefined ? {} : { ca: config.ca }),
      ...(request.signal === undefined ? {} : { signal: request.signal }),
    });
    const connectTimer = setTimeout(
      () => outgoing.destroy(originTimeout("accept the connection")),
      config.connectTimeoutMs,
    );
    outgoing.once("socket", (socket) => {
      const connected = () => {
        clearTimeout(connectTimer);
        // Defence in depth: the peer actually connected must pass the same policy.
        const peer = socket.remoteAddress ?? "";
        if (policy(peer) !== null) outgoing.destroy(refused(policy, peer));
      };
      if (socket.connecting) socket.once("connect", connected);
      else connected();
    });
    outgoing.once("response", (response) => {
      clearTimeout(connectTimer);
      resolve(response);
    });
    outgoing.once("error", (error) => {
      clearTimeout(connectTimer);
      reject(error);
    });
    outgoing.end();
  });
}

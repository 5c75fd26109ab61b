/*
 * The Lambda event and result shapes this binding reads and writes, declared structurally (only
 * the fields used) so the package needs no `@types/aws-lambda`; the real types are assignable.
 */

type Headers = Record<string, string | undefined>;
type MultiValueHeaders = Record<string, string[] | undefined>;

/** API Gateway REST API (payload format 1.0); also HTTP API events with payload format 1.0. */
export interface ApiGatewayV1Event {
  version?: "1.0";
  httpMethod: string;
  /** Resource path without the stage (e.g. `/v1/images`). */
  path: string;
  headers?: Headers | null;
  multiValueHeaders?: MultiValueHeaders | null;
  /** Decoded query values. */
  queryStringParameters?: Record<string, string | undefined> | null;
  multiValueQueryStringParameters?: Record<string, string[] | undefined> | null;
  body: string | null;
  isBase64Encoded: boolean;
  requestContext: {
    stage?: string;
    domainName?: string;
    /** Path as the client sent it (stage or custom-domain base path included). */
    path?: string;
  };
}

/** API Gateway HTTP API (payload format 2.0) and Lambda Function URLs. */
export interface ApiGatewayV2Event {
  version: "2.0";
  /** Path as received; includes the stage for named (non-`$default`) stages. */
  rawPath: string;
  /** The query string as sent (still percent-encoded). */
  rawQueryString: string;
  /** Lower-case names; repeated headers are joined with commas. */
  headers?: Headers;
  cookies?: string[];
  body?: string;
  isBase64Encoded: boolean;
  requestContext: {
    domainName: string;
    stage?: string;
    http: { method: string };
  };
}

/** Application Load Balancer target-group event (with or without multi-value headers). */
export interface AlbEvent {
  httpMethod: string;
  /** Full path as sent. */
  path: string;
  headers?: Headers;
  multiValueHeaders?: MultiValueHeaders;
  /** Query values as sent: ALB does not decode them. */
  queryStringParameters?: Record<string, string | undefined>;
  multiValueQueryStringParameters?: Record<string, string[] | undefined>;
  body: string | null;
  isBase64Encoded: boolean;
  requestContext: { elb: { targetGroupArn: string } };
}

/** Every event the handler accepts. */
export type LambdaHttpEvent = ApiGatewayV1Event | ApiGatewayV2Event | AlbEvent;

/** The result for API Gateway (both versions) and Function URLs. */
export interface ApiGatewayResult {
  statusCode: number;
  headers?: Record<string, string>;
  multiValueHeaders?: Record<string, string[]>;
  body: string;
  isBase64Encoded: boolean;
}

/** The result for ALB, which also wants a status line. */
export interface AlbResult extends ApiGatewayResult {
  statusDescription: string;
}

export type LambdaHttpResult = ApiGatewayResult | AlbResult;

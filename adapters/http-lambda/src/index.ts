export {
  createLambdaHandler,
  isBinaryContentType,
  type LambdaHandlerOptions,
  type LambdaHttpHandler,
  lambdaHandlerOptionsSchema,
} from "./create-lambda-handler.js";
export type {
  AlbEvent,
  AlbResult,
  ApiGatewayResult,
  ApiGatewayV1Event,
  ApiGatewayV2Event,
  LambdaHttpEvent,
  LambdaHttpResult,
} from "./events.js";

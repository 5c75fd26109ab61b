/**
 * Starts Swagger UI on the served OpenAPI document. "Authorize" takes an `x-api-key` (the
 * document's ApiKeyAuth scheme) that "Try it out" then sends; nothing is fetched from elsewhere
 * (the validator badge, which calls validator.swagger.io, is off).
 */
declare const SwaggerUIBundle: (options: Record<string, unknown>) => unknown;

const root = document.getElementById("swagger-ui") as HTMLElement;
(window as unknown as { ui: unknown }).ui = SwaggerUIBundle({
  url: root.dataset.openapiUrl,
  dom_id: "#swagger-ui",
  deepLinking: true,
  validatorUrl: null,
  docExpansion: "list",
  tryItOutEnabled: false,
  persistAuthorization: false,
});

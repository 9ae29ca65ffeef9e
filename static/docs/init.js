window.ui = SwaggerUIBundle({ url: "/openapi.json", dom_id: "#api", deepLinking: true, displayOperationId: true });
